package consolidation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Extractor extracts facts: the deterministic extractor, or an LLM with
// it as fallback. name is reported in ConsolidateReply.extractor.
type Extractor interface {
	ExtractFacts(ctx context.Context, msgs []consolidate.Message, known []consolidate.Fact) (facts []consolidate.Fact, name string, err error)
}

// Merger merges the current value of a fact with a new one (a scope whose
// conflict strategy is "llm"): it returns the value the key should hold.
type Merger interface {
	MergeFact(ctx context.Context, key, current, proposed string) (string, error)
}

// Deterministic is consolidate.Extract as an Extractor.
type Deterministic struct{}

// ExtractFacts implements Extractor.
func (Deterministic) ExtractFacts(_ context.Context, msgs []consolidate.Message, known []consolidate.Fact) ([]consolidate.Fact, string, error) {
	return consolidate.Extract(msgs, known), "deterministic", nil
}

var _ Extractor = Deterministic{}

// Config configures a Consolidator.
type Config struct {
	// OnTerminate: consolidate a session when it terminates (Later), and
	// at start the terminated sessions a crash left without a marker
	// (Resume).
	OnTerminate bool
	// EveryTurns > 0: also consolidate after every that many user turns.
	EveryTurns int
	// SummaryAfter: an episode written into an agent's scope with this
	// many similar older live episodes is summarized with them. 0:
	// consolidate.DefaultSummaryAfter; < 0: never; at most
	// consolidate.MaxSummaryAfter.
	SummaryAfter int
	// Extractor: nil is the deterministic one.
	Extractor Extractor
	// Merger settles a new value in scopes whose conflict strategy is
	// "llm" (nil: last write wins there too).
	Merger Merger
	// Timeout bounds one background run.
	Timeout time.Duration
	// Workers run the background runs; Queue bounds the runs waiting.
	Workers, Queue int
	// ResumeWindow: Resume looks at sessions terminated this recently.
	// ResumeWait bounds its wait for the read model at start.
	ResumeWindow, ResumeWait time.Duration
	// Logger (nil: slog.Default()).
	Logger *slog.Logger
	// FactOutcomes counts the facts extracted by outcome; Errors the
	// background runs that failed or were refused (both optional).
	FactOutcomes *prometheus.CounterVec
	Errors       prometheus.Counter
}

// DefaultConfig returns the defaults: consolidate at termination, two
// workers, a queue of 1024, 2 minutes a run, resume what terminated in the
// last 24 hours.
func DefaultConfig() Config {
	return Config{OnTerminate: true, Timeout: 2 * time.Minute, Workers: 2, Queue: 1024,
		ResumeWindow: 24 * time.Hour, ResumeWait: 10 * time.Minute}
}

// Validate checks cfg.
func (c Config) Validate() error {
	switch {
	case c.EveryTurns < 0:
		return errors.New("consolidation: EveryTurns < 0")
	case c.Timeout <= 0:
		return errors.New("consolidation: Timeout must be positive")
	case c.Workers <= 0 || c.Queue <= 0:
		return errors.New("consolidation: Workers and Queue must be positive")
	case c.ResumeWindow <= 0 || c.ResumeWait <= 0:
		return errors.New("consolidation: ResumeWindow and ResumeWait must be positive")
	}
	return nil
}

// Consolidator runs consolidations: on demand (Consolidate), in the
// background after a termination or every N turns (Later), and at start
// for the sessions a crash interrupted (Resume). It holds no state of a
// run between calls: everything a run knows it reads through the ports.
type Consolidator struct {
	cfg      Config
	scopes   Scopes
	sessions Sessions
	log      *slog.Logger
	bg       background
}

// Limits of one run.
const (
	maxSessionMsgs = 20000 // messages read for one run
	messagesPage   = 50
	maxKnownFacts  = 5000
)

// New returns a Consolidator reading and writing through scopes and
// sessions; its background workers run until Close.
func New(cfg Config, scopes Scopes, sessions Sessions) (*Consolidator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if scopes == nil || sessions == nil {
		return nil, errors.New("consolidation: New needs the scopes and the sessions")
	}
	if cfg.Extractor == nil {
		cfg.Extractor = Deterministic{}
	}
	c := &Consolidator{cfg: cfg, scopes: scopes, sessions: sessions, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.bg.init(cfg.Workers, cfg.Queue)
	return c, nil
}

// Close refuses new background runs, cancels those running and waits for
// them. It is idempotent.
func (c *Consolidator) Close() { c.bg.wait() }

// Target is where a session's marker (and digest) goes: the session's
// user's scope, else its agent's; ok false when it has neither.
func Target(info *memoryv1.SessionInfo) (Scope, bool) {
	switch {
	case info.GetUserId() != "":
		return Scope{sharedmem.KindUser, info.GetUserId()}, true
	case info.GetAgentId() != "":
		return Scope{sharedmem.KindAgent, info.GetAgentId()}, true
	}
	return Scope{}, false
}

// Marker says where the end of session info's consolidation shows: the
// consolidated/<session> entry of its target scope, written last by
// every run, and the watch subject that reports its write. nil when the
// session has no scope to write to.
func Marker(info *memoryv1.SessionInfo) *memoryv1.ConsolidationMarker {
	t, ok := Target(info)
	if !ok {
		return nil
	}
	watch := "mem.v1.scope." + string(t.Kind) + "." + t.ID + ".watch"
	if t.Kind == sharedmem.KindAgent {
		watch = "mem.v1.agent." + t.ID + ".watch"
	}
	return &memoryv1.ConsolidationMarker{Scope: t.String(), Key: MarkerKey(info.GetSessionId()), Watch: watch}
}

// Consolidated reports whether session info has its marker: a run
// finished (the marker is written after everything else).
func (c *Consolidator) Consolidated(ctx context.Context, info *memoryv1.SessionInfo) (bool, error) {
	t, ok := Target(info)
	if !ok {
		return false, nil
	}
	_, err := c.scopes.Get(ctx, t, MarkerKey(info.GetSessionId()))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Consolidate extracts the facts of session id and writes them: semantic
// facts and instructions into user:<the session's user>, episodes into
// agent:<the session's agent>, the session's digest into the user's scope
// (else the agent's), and the consolidated/<id> marker last. A fact
// without a scope to go to is skipped. The reply lists every fact with
// its outcome, the digest, and, when done, the marker: a run that returns
// without an error finished. dryRun extracts and writes nothing.
//
// A run may be repeated any time (a crash, a second trigger): each write's
// command id is derived from what it writes, so a repeat finds its writes
// in the keys' histories and writes nothing new.
func (c *Consolidator) Consolidate(ctx context.Context, id string, dryRun bool) (*memoryv1.ConsolidateReply, error) {
	info, err := c.sessions.Info(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := c.sessions.WaitFor(ctx, info.GetSeq()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBehind, err)
	}
	msgs, err := c.messages(ctx, id)
	if err != nil {
		return nil, err
	}
	r := &run{c: c, id: id, info: info, dryRun: dryRun}
	if u := info.GetUserId(); u != "" {
		r.user = &Scope{sharedmem.KindUser, u}
	}
	if a := info.GetAgentId(); a != "" {
		r.agent = &Scope{sharedmem.KindAgent, a}
	}
	return r.do(ctx, msgs)
}

// messages reads the session's user and assistant messages, in order, with
// when each was said.
func (c *Consolidator) messages(ctx context.Context, id string) ([]consolidate.Message, error) {
	var out []consolidate.Message
	for off := 0; off < maxSessionMsgs; off += messagesPage {
		page, err := c.sessions.Messages(ctx, id, off, messagesPage)
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			if m.GetRole() != memoryv1.Role_ROLE_USER && m.GetRole() != memoryv1.Role_ROLE_ASSISTANT {
				continue
			}
			said := m.GetSaidUnixNano()
			if said == 0 {
				said = m.GetCreatedUnixNano()
			}
			out = append(out, consolidate.Message{ID: m.GetId(), Seq: m.GetSeq(), User: m.GetRole() == memoryv1.Role_ROLE_USER,
				Text: m.GetContent(), Said: said})
		}
		if len(page) < messagesPage {
			break
		}
	}
	return out, nil
}

// count counts a fact's outcome.
func (c *Consolidator) count(outcome string) {
	if c.cfg.FactOutcomes != nil {
		c.cfg.FactOutcomes.WithLabelValues(outcome).Inc()
	}
}

// failed counts a background run that failed or was refused.
func (c *Consolidator) failed() {
	if c.cfg.Errors != nil {
		c.cfg.Errors.Inc()
	}
}

// summaryAfter is the configured threshold (0: off).
func (c *Consolidator) summaryAfter() int {
	switch k := c.cfg.SummaryAfter; {
	case k < 0:
		return 0
	case k == 0:
		return consolidate.DefaultSummaryAfter
	default:
		return min(k, consolidate.MaxSummaryAfter)
	}
}
