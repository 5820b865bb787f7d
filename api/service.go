package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api/lastwrite"
	"github.com/agentmem/agentmem/api/limits"
	"github.com/agentmem/agentmem/consolidation"
	"github.com/agentmem/agentmem/internal/gopool"
	"github.com/agentmem/agentmem/internal/inflight"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/version"
	"github.com/agentmem/agentmem/tenancy"
)

// Dispatcher hands a request to the owner of a session (actors.Directory).
type Dispatcher interface {
	Dispatch(sessionID string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error
}

var _ Dispatcher = (*actors.Directory)(nil)

// Config bounds the service's queries (natsapi.Config names its NATS
// service).
type Config struct {
	// Version is the service's, as its OpenAPI document says it.
	Version string
	// MaxPayload is the most bytes one reply may carry (the NATS
	// connection's max payload; default 1 MiB): data.get reads in ranges
	// that fit it.
	MaxPayload int64
	// MaxConcurrentQueries bounds projection queries in flight (503 beyond).
	MaxConcurrentQueries int
	// MaxConcurrentWatches bounds watch long polls in flight on the node
	// (503 beyond; each caller is bounded by its own max_watches first).
	MaxConcurrentWatches int
	// LogPartitions is the number of streams the log is in (consistency
	// tokens name it; 0 is 1).
	LogPartitions int
	// QueryTimeout bounds one query, MinSeqWait the wait for min_seq within it.
	QueryTimeout  time.Duration
	MinSeqWait    time.Duration
	RerankTimeout time.Duration
	// LargeToolResultBytes: tool results above it are stored as large data
	// (when a DataStore is configured).
	LargeToolResultBytes int
	// ForwardTimeout bounds a request forwarded to the node that serves
	// its aggregate (with a Router), the wait for an owner included.
	ForwardTimeout time.Duration
	// Consolidation (package consolidation). ConsolidateOnTerminate:
	// extract a session's facts into long-term memory when it terminates
	// (and, at start, for terminated sessions without a consolidated/<id>
	// marker: ResumeConsolidation). ConsolidateEveryTurns > 0: also after
	// every that many user turns. Extractor: nil is the deterministic
	// extractor.
	ConsolidateOnTerminate bool
	ConsolidateEveryTurns  int
	Extractor              FactExtractor
	// Merger merges two values of a fact in scopes whose conflict strategy
	// is "llm" (nil: last write wins there too).
	Merger FactMerger
	// EpisodeSummaryAfter: an episode written into an agent's scope with
	// this many similar older live episodes is summarized with them
	// (consolidation/episodes.go). 0: consolidate.DefaultSummaryAfter;
	// < 0: never; at most consolidate.MaxSummaryAfter.
	EpisodeSummaryAfter int
}

// DefaultConfig returns the service defaults.
func DefaultConfig() Config {
	return Config{
		Version: version.Version, MaxPayload: 1 << 20,
		MaxConcurrentQueries: 256, MaxConcurrentWatches: 1024, QueryTimeout: 5 * time.Second, MinSeqWait: 2 * time.Second,
		RerankTimeout: time.Second, LargeToolResultBytes: DefaultLargeToolResultBytes,
		ForwardTimeout: 30 * time.Second, ConsolidateOnTerminate: true,
	}
}

// Deps are the service's collaborators; ReadModel and Reranker are optional.
type Deps struct {
	Dispatcher Dispatcher
	// Scopes serves agent and shared-scope memory (nil: those endpoints are not served).
	Scopes    ScopeDispatcher
	ReadModel ReadModel
	// Entries ranks scope entries (nil: search answers 503).
	Entries EntrySearcher
	// Data serves mem.v1.data.* (nil: not served).
	Data     DataStore
	Reranker Reranker
	Logger   *slog.Logger
	// Metrics (nil: instruments not registered anywhere).
	Metrics *Metrics
	// Watcher serves watch long polls (nil: not served).
	Watcher Watcher
	// Tenants maps verified NATS identities to callers (nil: the
	// single-user node, every request is the Unrestricted caller).
	Tenants *tenancy.Directory
	// Router places aggregates on the nodes of a cluster (nil: this node
	// serves every aggregate).
	Router Router
	// Eraser carries out erase requests (nil: erase answers 501).
	Eraser Eraser
}

// Service is the memory service: its operations, their handlers and the
// entry through which the dispatcher serves a transport's requests (Run).
type Service struct {
	cfg     Config
	d       Dispatcher
	scopes  ScopeDispatcher
	data    DataStore
	entries EntrySearcher
	rm      ReadModel
	eraser  Eraser
	rerank  Reranker
	logger  *slog.Logger
	metrics *Metrics
	tenants *tenancy.Directory
	anyone  *tenancy.Caller // the caller of every request without tenants
	queries chan struct{}
	watches chan struct{}
	watcher Watcher
	// watchCtx ends the watch polls in flight when the service stops.
	watchCtx    context.Context
	stopWatches context.CancelFunc
	// querySlots and watchSlots bound each caller (tenancy.Limits).
	querySlots, watchSlots *limits.Slots
	ctx                    context.Context
	cancel                 context.CancelFunc
	inflight               inflight.Counter
	// router places aggregates on nodes (nil: this node serves all);
	// routes are the operations served, by name (fixed once New returns).
	router Router
	routes map[string]*route
	// prepared keeps the candidates' texts and counts between appends.
	prepared segmented.PrepareMemo
	// writes remembers each caller's last scope write (awaitOwnWrite).
	writes lastwrite.Callers
	// sessionSeqs remembers the stream sequence of each session's last
	// command served here (the assembler's search reads up to it).
	sessionSeqs lastwrite.Sessions
	// recent remembers each caller's latest commands to its sessions.
	recent lastwrite.Recent
	// acked is the highest stream sequence of a write answered here.
	acked atomicMax
	// workers runs the queries (goQuery) on reused goroutines.
	workers *gopool.Pool
	// cons runs consolidations: on demand, after a termination or a turn
	// count, and the restart sweep (closed by Stop; nil without the scopes
	// or the read model).
	cons *consolidation.Consolidator
}

// queryWorkerIdle is how long a query goroutine waits for the next query
// before it exits.
const queryWorkerIdle = 10 * time.Second

// SessionSubject is the request subject of one session endpoint.
func SessionSubject(id, op string) string { return "mem.v1.session." + id + "." + op }

// New builds the service of deps: its operations are served by the
// transports given it (package natsapi over NATS, httpapi over HTTP),
// each through Serve or Handler.
func New(deps Deps, cfg Config) (*Service, error) {
	if deps.Dispatcher == nil {
		return nil, errors.New("api: deps.Dispatcher is required")
	}
	if cfg.MaxConcurrentQueries <= 0 || cfg.QueryTimeout <= 0 || cfg.MinSeqWait <= 0 || cfg.RerankTimeout <= 0 {
		return nil, errors.New("api: max_concurrent_queries and the query timeouts must be > 0")
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Metrics == nil {
		deps.Metrics = NewMetrics(nil)
	}
	if cfg.ForwardTimeout <= 0 {
		cfg.ForwardTimeout = DefaultConfig().ForwardTimeout
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = DefaultConfig().MaxPayload
	}
	watchCtx, stopWatches := context.WithCancel(context.Background())
	anyLimits := tenancy.DefaultLimits()
	anyLimits.MaxConcurrentQueries = cfg.MaxConcurrentQueries
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{cfg: cfg, d: deps.Dispatcher, scopes: deps.Scopes, data: deps.Data, entries: deps.Entries, rm: deps.ReadModel, eraser: deps.Eraser, rerank: deps.Reranker,
		logger: deps.Logger, metrics: deps.Metrics, tenants: deps.Tenants, anyone: tenancy.Unrestricted(anyLimits),
		watcher: deps.Watcher, router: deps.Router, watchCtx: watchCtx, stopWatches: stopWatches, watches: make(chan struct{}, max(cfg.MaxConcurrentWatches, 1)),
		querySlots: limits.NewSlots("max_concurrent_queries", func(l tenancy.Limits) int { return l.MaxConcurrentQueries }),
		watchSlots: limits.NewSlots("max_watches", func(l tenancy.Limits) int { return l.MaxWatches }),
		queries:    make(chan struct{}, cfg.MaxConcurrentQueries), ctx: ctx, cancel: cancel, workers: gopool.New(queryWorkerIdle)}
	s.routes = s.newRoutes()
	var err error
	if s.cons, err = s.newConsolidator(); err != nil {
		cancel()
		stopWatches()
		return nil, err
	}
	return s, nil
}

// stopQuiet is how long Stop waits with no request in flight and none
// beginning before it refuses new ones: the messages its drained
// subscriptions still held are delivered to their handlers by then (they
// reached this client before the flush that follows the drain).
const stopQuiet = 50 * time.Millisecond

// Stop waits, bounded by ctx, for the replies of the requests already
// dispatched; its transports stopped taking new ones first (natsapi
// drains its subscriptions). What they and forwards from other nodes still
// deliver meanwhile is served as usual (forwarded, with a Router, to the
// aggregate's new owner); only after stopQuiet without a request (at once
// when no other node is live) are later ones refused (503).
func (s *Service) Stop(ctx context.Context) error {
	var err error
	// Watch polls in flight answer at once, with what they have.
	s.stopWatches()
	defer s.cancel()
	// A node alone (no Router, or one that says no other node is live) has
	// nobody to send late requests to: it stops once nothing is in flight.
	quiet := stopQuiet
	if a, ok := s.router.(interface{ Alone() bool }); s.router == nil || (ok && a.Alone()) {
		quiet = 0
	}
	if werr := s.inflight.CloseWhenQuiet(ctx, quiet); werr != nil {
		err = errors.Join(err, fmt.Errorf("api: waiting for in-flight requests: %w", werr))
	}
	s.workers.Stop()
	if s.cons != nil {
		s.cons.Close()
	}
	return err
}
