package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/sharedmem"
)

// Config tunes the session actors.
type Config struct {
	// IdleTimeout passivates an actor that received nothing for this long.
	IdleTimeout time.Duration
	// SnapshotEvery writes a snapshot after this many batches since the last one.
	SnapshotEvery uint64
	// MaxConcurrentRecoveries bounds activations loading from the log at once.
	MaxConcurrentRecoveries int
	// StoreTimeout bounds one log append or load.
	StoreTimeout time.Duration
	// RestartBackoff is the first delay of the supervisor's exponential backoff.
	RestartBackoff time.Duration
	// RewriteTimeout bounds one call of the optional Rewriter.
	RewriteTimeout time.Duration
	// AssemblyWait bounds how long a session holds its requests for the
	// sections of an append's user message decided later (Append.Later):
	// past it, they are served without them (logged and counted).
	AssemblyWait time.Duration
	// EpisodicTTL is the default TTL of episodic entries written without
	// one, in scopes whose episodic_ttl_seconds is 0 (retention;
	// 0 = never). Whole seconds; the expiry is recorded in the entry's event.
	EpisodicTTL time.Duration
}

// DefaultEpisodicTTL is the default of Config.EpisodicTTL: 90 days.
const DefaultEpisodicTTL = 90 * 24 * time.Hour

// DefaultConfig returns the defaults documented in the README.
func DefaultConfig() Config {
	return Config{
		IdleTimeout:             5 * time.Minute,
		SnapshotEvery:           100,
		MaxConcurrentRecoveries: 32,
		StoreTimeout:            5 * time.Second,
		RestartBackoff:          100 * time.Millisecond,
		RewriteTimeout:          10 * time.Second,
		AssemblyWait:            5 * time.Second,
		EpisodicTTL:             DefaultEpisodicTTL,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.IdleTimeout <= 0:
		return fmt.Errorf("actors: idle_timeout must be > 0, got %s", c.IdleTimeout)
	case c.SnapshotEvery == 0:
		return errors.New("actors: snapshot_every must be > 0")
	case c.MaxConcurrentRecoveries <= 0:
		return errors.New("actors: max_concurrent_recoveries must be > 0")
	case c.StoreTimeout <= 0:
		return errors.New("actors: store_timeout must be > 0")
	case c.RestartBackoff <= 0:
		return errors.New("actors: restart_backoff must be > 0")
	case c.RewriteTimeout <= 0:
		return errors.New("actors: rewrite_timeout must be > 0")
	case c.AssemblyWait <= 0:
		return errors.New("actors: assembly_wait must be > 0")
	case c.EpisodicTTL < 0 || c.EpisodicTTL > sharedmem.MaxTTLSeconds*time.Second:
		return fmt.Errorf("actors: episodic_ttl must be in [0, %ds] (0 = never), got %s", sharedmem.MaxTTLSeconds, c.EpisodicTTL)
	case c.EpisodicTTL%time.Second != 0:
		return fmt.Errorf("actors: episodic_ttl must be whole seconds, got %s", c.EpisodicTTL)
	}
	return nil
}

// Rewriter produces a better summary of the given text beside the actor (an
// LLM). It may be slow or fail: the extractive summary stays in place until a
// rewrite is decided and stored.
type Rewriter interface {
	Rewrite(ctx context.Context, text string, maxTokens int) (string, error)
}

// Deps are the collaborators of the session actors.
type Deps struct {
	Log       events.Log
	Snapshots events.SnapshotStore
	Codec     *events.Codec
	Tokenizer segmented.Tokenizer
	// Summarizer is the deterministic summarizer used inside Decide (nil = extractive).
	Summarizer segmented.Summarizer
	// Rewriter is optional.
	Rewriter Rewriter
	// Libraries reads pattern libraries for the sessions' ROMs (nil: no
	// session may name one). Its answer is recorded in the session's
	// events, so it may read a projection that lags.
	Libraries segmented.LibrarySource
	// Commands finds commands stored before an aggregate's window of recent
	// commands (the projection's command index). Nil: a retry is recognised
	// only within the window (the last 64 commands of the aggregate).
	Commands CommandIndex
	Metrics  *Metrics
	Logger   *slog.Logger
	// Now is the clock (nil = time.Now).
	Now func() time.Time
	// Serves reports whether this node still serves aggregate id (nil:
	// always). Sections searched for a session this node handed over
	// (its partition moved: the node is leaving, or lost the lease) are
	// dropped instead of stored.
	Serves func(id string) bool
}

func (d *Deps) validate() error {
	switch {
	case d.Log == nil:
		return errors.New("actors: deps.Log is required")
	case d.Snapshots == nil:
		return errors.New("actors: deps.Snapshots is required")
	case d.Codec == nil:
		return errors.New("actors: deps.Codec is required")
	case d.Tokenizer == nil:
		return errors.New("actors: deps.Tokenizer is required")
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics(nil)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return nil
}
