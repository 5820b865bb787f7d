package node

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/llmsummary"
	"github.com/agentmem/agentmem/largedata"
	"github.com/agentmem/agentmem/placement"
)

// Sync modes of the embedded server's JetStream store.
const (
	// SyncDefault acknowledges after the write reached the OS: survives a
	// process crash (kill -9), not a power loss.
	SyncDefault = "default"
	// SyncAlways fsyncs every write before acknowledging it.
	SyncAlways = "always"
)

// ProjectionFile is the bbolt projection's file name under the data dir.
const ProjectionFile = "projection.db"

// Config is a node's configuration; see the README for each flag.
type Config struct {
	DataDir    string
	NATSListen string
	// NATSURL, when set, uses an external NATS instead of embedding one.
	NATSURL   string
	NATSCreds string
	// NATSUser/NATSPassword authenticate the node's own connection (e.g. the
	// "node" user of a --nats-config with users and permissions).
	NATSUser     string
	NATSPassword string
	// NATSAPIUser/NATSAPIPassword/NATSAPICreds authenticate the service's
	// own connection (it serves mem.v1.> and should be allowed to publish
	// replies only: _INBOX.>, _R_.>). Unset: the service shares the node's
	// connection (a warning is logged), except on the single-user embedded
	// server, where the node makes both users itself.
	NATSAPIUser     string
	NATSAPIPassword string
	NATSAPICreds    string
	// NATSConfig is an optional nats-server config file for the embedded server.
	NATSConfig string
	// Tenants is the tenants file (tenancy.Load): callers are identified by
	// their NATS account and user (Nats-Request-Info) and checked on every
	// endpoint. Empty: the single-user node, every caller may do anything.
	Tenants  string
	Sync     string
	Replicas int
	// DuplicateWindow is the stream's Nats-Msg-Id window (JetStream
	// dedupe). Retries are recognised at any age without it (the command
	// index); it is the first line for retries racing their original.
	DuplicateWindow time.Duration
	// MinFreeBytes is the free space the node keeps on the disk of its data
	// dir when it embeds NATS: below it, writes answer 503 at once
	// (out_of_space) until space returns, so the store is not filled to the
	// last byte. 0 refuses only when the disk is full; negative skips the
	// check (writes are then refused once JetStream reports the fault).
	MinFreeBytes int64
	// HealthInterval is how often the node looks at the disk, JetStream
	// and the projector (the storage watch). Programmatic only.
	HealthInterval time.Duration
	// HTTPAddr serves /metrics, /healthz, the HTTP API (/v1/) and the
	// inspector (/ui/); empty disables it.
	HTTPAddr string
	// HTTPOrigins are the browser origins the HTTP API also answers
	// (besides the listener's own); comma separated on the command line.
	HTTPOrigins []string
	Stream      string
	// LogPartitions is the number of streams the log is in (flag
	// --log-partitions, default 1: the one stream Stream, today's layout;
	// 0 is 1).
	// K > 1 puts each aggregate in stream <Stream>_P<i>, i its id's
	// placement hash modulo K (docs/PARTITIONS.md); every node of a
	// cluster must use the same K.
	LogPartitions int
	// ProjectionPartitions C > 1 splits the read model into C corpus
	// partitions (a user's corpus, or the shared one) and keeps on each
	// node only the files of the partitions it owns, reads routed to
	// their owners (flag --projection-partitions; 0: one projection of
	// the whole log on every node, today's layout). node/corpusfiles.go.
	ProjectionPartitions int

	// UIAllowedHosts are Host values the inspector answers to besides
	// loopback names and the listener's address (DNS rebinding guard).
	UIAllowedHosts []string

	// DenyPurge creates the log stream with deny_purge (default true;
	// events.JetStreamConfig.DenyPurge). Programmatic only: there is no
	// flag to turn it off, and JetStream never turns it off on a stream
	// that has it.
	DenyPurge bool
	// LogAllowDelete creates a NEW log stream without deny_delete and
	// deny_purge (events.JetStreamConfig.AllowDelete; flag
	// --log-allow-delete, default true: erasure purges subjects;
	// false keeps the older, erase-less stream). An existing stream keeps its own
	// settings: one that denies deletes is moved by `replay migrate-log`,
	// one that allows them (migrated) is never made to deny them again.
	LogAllowDelete bool
	// Projector runs the projector in this process (recall, search, lists).
	Projector bool
	// ProjectorBatch, when > 0, is the most log records one projection
	// transaction applies (projections.Config.BatchEvents; 0: its default).
	// Programmatic only: 1 makes every record a commit of its own, a slow
	// projector for tests of a backlog.
	ProjectorBatch int
	Actors         actors.Config
	// LLM, when LLM.BaseURL is set, rewrites extractive summaries with an
	// OpenAI-compatible endpoint beside the actors.
	LLM llmsummary.Config
	// Data configures large data (bucket <stream>_DATA).
	Data largedata.Config
	// Embeddings, when Embeddings.BaseURL is set (and the projector runs
	// here), embeds every message with an OpenAI-compatible /embeddings
	// endpoint beside the projector, and each search query too; session
	// search then fuses BM25 with the nearest vectors (reciprocal rank
	// fusion). Empty: BM25 only, nothing called.
	Embeddings embed.Config
	// NodeID names this node in the cluster's placement (unique, stable
	// across restarts). Empty: the id stored in the data dir's node-id file
	// (made on first start), or a random one without a data dir.
	NodeID string
	// Placement configures the partition leases (NodeID and Replicas are
	// the node's).
	Placement placement.Config
	// ArchiveAfter archives a TERMINATED session this long after its last
	// change (retention): the projector's node sweeps its session
	// index and sends each such session ARCHIVE, which its actor stores as
	// a status change. 0 = never. Needs the projector in this process.
	ArchiveAfter time.Duration
	// DeleteAfter erases an ARCHIVED session this long after it was
	// archived (its last change; delete_after): the same sweep erases the
	// session, its session:<id> scope and its large data as an erase
	// request does (erasure.Coordinator, reason RETENTION, requested by
	// "node"): content-free records, the messages purged, the snapshots
	// deleted, the read-model rows with them. 0 = never (the default).
	// Needs the projector in this process.
	DeleteAfter time.Duration
	// LogWindow is the time-travel window of the bounded log:
	// a scope whose oldest message is older than this is rewritten from a
	// baseline (its state with the versions older than the window dropped,
	// each key's current one kept) and its older messages are removed, by
	// its actor, as the node (logCompactor). 0 = never. Needs a log that
	// allows purges and the projector in this process.
	LogWindow time.Duration
	// Now is the clock of the actors (the times their events record), the
	// retention sweep and the log compactor (nil: time.Now). Programmatic
	// only: benchmarks step it.
	Now func() time.Time
	// EraseStep, when set, is called at each step of an erasure
	// (erasure.Config.Step): an error stops it there. Programmatic only:
	// fault tests stop or kill a node in the middle of an erase.
	EraseStep func(erasure.Step) error
	// Reranker, when set, reorders session search hits (a cross-encoder, an
	// LLM); when it fails the BM25 order is kept. Programmatic only.
	Reranker api.Reranker
	// Consolidation extracts the facts a session's user states into
	// long-term memory.
	Consolidation Consolidation
}

// Consolidation configures fact extraction (api.Config.Consolidate*).
type Consolidation struct {
	// OnTerminate: when a session terminates (and, at start, for
	// terminated sessions a crash left unconsolidated).
	OnTerminate bool
	// EveryTurns > 0: also after every that many user turns.
	EveryTurns int
	// LLM: extract with the --llm-* endpoint, the deterministic extractor
	// as fallback (needs LLM.BaseURL).
	LLM bool
	// SummaryAfter: similar episodes an agent's scope holds before a new
	// one is summarized with them (api.Config.EpisodeSummaryAfter: 0 the
	// default, < 0 never).
	SummaryAfter int
}

// DefaultConfig returns the defaults of `go run ./cmd/node`.
func DefaultConfig() Config {
	return Config{
		DataDir:         "./data",
		NATSListen:      "127.0.0.1:4222",
		Sync:            SyncDefault,
		Replicas:        1,
		DuplicateWindow: 2 * time.Minute,
		HTTPAddr:        "127.0.0.1:9090",
		MinFreeBytes:    64 << 20,
		HealthInterval:  500 * time.Millisecond,
		Stream:          "MEM",
		LogPartitions:   1,
		DenyPurge:       true,
		LogAllowDelete:  true,
		Projector:       true,
		Actors:          actors.DefaultConfig(),
		LLM:             llmsummary.DefaultConfig(),
		Embeddings:      embed.DefaultConfig(),
		Consolidation:   Consolidation{OnTerminate: true},
		Data:            largedata.DefaultConfig(),
		Placement:       placement.DefaultConfig(),
		ArchiveAfter:    DefaultArchiveAfter,
		LogWindow:       DefaultLogWindow,
	}
}

// DefaultLogWindow is the default of Config.LogWindow: 30 days.
const DefaultLogWindow = 30 * 24 * time.Hour

// DefaultArchiveAfter is the default of Config.ArchiveAfter: 30 days.
const DefaultArchiveAfter = 30 * 24 * time.Hour

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if c.DataDir == "" && (c.NATSURL == "" || c.Projector) {
		return errors.New("node: data-dir is required (embedded NATS store, projection file)")
	}
	if c.NATSURL == "" {
		if _, _, err := net.SplitHostPort(c.NATSListen); err != nil {
			return fmt.Errorf("node: nats-listen %q: %w", c.NATSListen, err)
		}
	}
	if c.Sync != SyncDefault && c.Sync != SyncAlways {
		return fmt.Errorf("node: sync must be %q or %q, got %q", SyncDefault, SyncAlways, c.Sync)
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		return fmt.Errorf("node: replicas must be 1..5, got %d", c.Replicas)
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			return fmt.Errorf("node: http %q: %w", c.HTTPAddr, err)
		}
	}
	if c.HealthInterval < 10*time.Millisecond {
		return fmt.Errorf("node: health interval must be >= 10ms, got %s", c.HealthInterval)
	}
	if c.Stream == "" {
		return errors.New("node: stream name is required")
	}
	if c.DuplicateWindow < 100*time.Millisecond {
		return fmt.Errorf("node: duplicate window must be >= 100ms, got %s", c.DuplicateWindow)
	}
	if c.ArchiveAfter < 0 {
		return fmt.Errorf("node: archive-after must be >= 0 (0 = never), got %s", c.ArchiveAfter)
	}
	if c.LogWindow < 0 {
		return fmt.Errorf("node: log-window must be >= 0 (0 = never compact), got %s", c.LogWindow)
	}
	if c.DeleteAfter < 0 {
		return fmt.Errorf("node: delete-after must be >= 0 (0 = never), got %s", c.DeleteAfter)
	}
	if c.LogPartitions < 0 || c.LogPartitions > events.MaxLogPartitions {
		return fmt.Errorf("node: log-partitions must be 1..%d (0: 1), got %d", events.MaxLogPartitions, c.LogPartitions)
	}
	if p := c.ProjectionPartitions; p < 0 || p == 1 || p > events.MaxLogPartitions {
		return fmt.Errorf("node: projection-partitions must be 2..%d (0: one projection of the whole log), got %d", events.MaxLogPartitions, p)
	}
	if c.ProjectionPartitions > 0 && c.Embeddings.BaseURL != "" {
		return errors.New("node: projection-partitions: embeddings are not built for split projections yet; use one or the other")
	}
	if c.LLM.BaseURL != "" {
		if err := c.LLM.Validate(); err != nil {
			return err
		}
	}
	if c.Embeddings.BaseURL != "" {
		if err := c.Embeddings.Validate(); err != nil {
			return err
		}
	}
	return c.Actors.Validate()
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
