package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/consolidation"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/gopool"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/version"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// Dispatcher hands a request to the owner of a session (actors.Directory).
type Dispatcher interface {
	Dispatch(sessionID string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error
}

var _ Dispatcher = (*actors.Directory)(nil)

// Config names the service and bounds its queries.
type Config struct {
	Name       string
	Version    string
	QueueGroup string
	// MaxPending bounds the requests queued per endpoint subscription before
	// NATS reports a slow consumer (the client then times out and retries).
	MaxPending int
	// MaxConcurrentQueries bounds projection queries in flight (503 beyond).
	MaxConcurrentQueries int
	// MaxConcurrentWatches bounds watch long polls in flight on the node
	// (503 beyond; each caller is bounded by its own max_watches first).
	MaxConcurrentWatches int
	// QueryTimeout bounds one query, MinSeqWait the wait for min_seq within it.
	QueryTimeout  time.Duration
	MinSeqWait    time.Duration
	RerankTimeout time.Duration
	// LargeToolResultBytes: tool results above it are stored as large data
	// (when a DataStore is configured).
	LargeToolResultBytes int
	// ReplyPrefixes are the reply subjects answered (default
	// DefaultReplyPrefixes). A request whose reply subject is elsewhere is
	// dropped unanswered and counted; the node's own subject spaces are
	// refused whatever this says.
	ReplyPrefixes []string
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
		Name: "memory", Version: version.Version, QueueGroup: "memory", MaxPending: 1 << 16,
		MaxConcurrentQueries: 256, MaxConcurrentWatches: 1024, QueryTimeout: 5 * time.Second, MinSeqWait: 2 * time.Second,
		RerankTimeout: time.Second, LargeToolResultBytes: DefaultLargeToolResultBytes,
		ReplyPrefixes: DefaultReplyPrefixes, ForwardTimeout: 30 * time.Second, ConsolidateOnTerminate: true,
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

// Service is the running micro service.
type Service struct {
	svc     micro.Service
	nc      *nats.Conn
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
	querySlots, watchSlots *slots
	ctx                    context.Context
	cancel                 context.CancelFunc
	inflight               inflight
	// router places aggregates on nodes (nil: this node serves all);
	// routes serve forwarded requests (fixed once Start returns).
	router Router
	routes routeTable
	// candidateKeys remembers what each session's appends search for.
	candidateKeys candidateKeyCache
	// prepared keeps the candidates' texts and counts between appends.
	prepared segmented.PrepareMemo
	// writes remembers each caller's last scope write (awaitOwnWrite).
	writes writeSeqs
	// sessionSeqs remembers the stream sequence of each session's last
	// command served here (the assembler's search reads up to it).
	sessionSeqs sessionSeqs
	// recent remembers each caller's latest commands to its sessions.
	recent recentWrites
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

// Start registers the service on nc.
func Start(nc *nats.Conn, deps Deps, cfg Config) (*Service, error) {
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
	if len(cfg.ReplyPrefixes) == 0 {
		cfg.ReplyPrefixes = DefaultReplyPrefixes
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name:        cfg.Name,
		Version:     cfg.Version,
		Description: "agentmem: event-sourced memory for LLM agents",
		QueueGroup:  cfg.QueueGroup,
	})
	if err != nil {
		return nil, fmt.Errorf("api: add service: %w", err)
	}
	watchCtx, stopWatches := context.WithCancel(context.Background())
	anyLimits := tenancy.DefaultLimits()
	anyLimits.MaxConcurrentQueries = cfg.MaxConcurrentQueries
	ctx, cancel := context.WithCancel(context.Background())
	abort := func() { // Start failed: undo what it did
		cancel()
		stopWatches()
		_ = svc.Stop()
	}
	s := &Service{svc: svc, nc: nc, cfg: cfg, d: deps.Dispatcher, scopes: deps.Scopes, data: deps.Data, entries: deps.Entries, rm: deps.ReadModel, eraser: deps.Eraser, rerank: deps.Reranker,
		logger: deps.Logger, metrics: deps.Metrics, tenants: deps.Tenants, anyone: tenancy.Unrestricted(anyLimits),
		watcher: deps.Watcher, router: deps.Router, watchCtx: watchCtx, stopWatches: stopWatches, watches: make(chan struct{}, max(cfg.MaxConcurrentWatches, 1)),
		querySlots: newSlots("max_concurrent_queries", func(l tenancy.Limits) int { return l.MaxConcurrentQueries }),
		watchSlots: newSlots("max_watches", func(l tenancy.Limits) int { return l.MaxWatches }),
		queries:    make(chan struct{}, cfg.MaxConcurrentQueries), ctx: ctx, cancel: cancel, workers: gopool.New(queryWorkerIdle)}
	var routes []route
	add := func(name, subject string, h func(*call)) error {
		_, placed := aggregateOf(subject)
		hf := s.timed(name, s.guardPlaced(h, placed))
		routes = append(routes, route{name: name, tokens: strings.Split(subject, "."), h: hf, serve: h})
		err := svc.AddEndpoint(name, natsHandler(hf), micro.WithEndpointSubject(subject),
			micro.WithEndpointPendingLimits(cfg.MaxPending, 256<<20))
		if err != nil {
			abort()
			return fmt.Errorf("api: add endpoint %s: %w", name, err)
		}
		return nil
	}
	for _, op := range operations {
		if !s.serves(op.needs) {
			continue
		}
		if err := add(op.name, op.subject, op.serve(s)); err != nil {
			return nil, err
		}
	}
	if s.scopes != nil {
		malformed := func(c *call) {
			c.fail(&Error{Code: 400, Field: "id", Message: "ids are 1..128 of [A-Za-z0-9_-]; dots split the subject"})
		}
		if err := add("agent_malformed", "mem.v1.agent.*.*.>", malformed); err != nil {
			return nil, err
		}
		if err := add("scope_malformed", "mem.v1.scope.*.*.*.>", malformed); err != nil {
			return nil, err
		}
	}
	// An id with dots splits into more subject tokens and would match no
	// endpoint (no responders): answer those with a 400 instead.
	err = svc.AddEndpoint("session_malformed", natsHandler(s.guard(func(c *call) {
		c.fail(&Error{Code: 400, Field: "session_id",
			Message: "ids are 1..128 of [A-Za-z0-9_-]; dots split the subject mem.v1.session.<id>.<op>"})
	})), micro.WithEndpointSubject("mem.v1.session.*.*.>"))
	if err != nil {
		abort()
		return nil, fmt.Errorf("api: add endpoint malformed: %w", err)
	}
	table, err := s.addOtherOps(routes)
	if err != nil {
		abort()
		return nil, err
	}
	s.routes = table
	if s.cons, err = s.newConsolidator(); err != nil {
		abort()
		return nil, err
	}
	return s, nil
}

// call is one request being served: where its answer goes, in which
// encoding, and who sent it (verified). Nothing in it is tied to a
// transport: r is a request (NATS or HTTP), rp answers it.
type call struct {
	r      request
	rp     replier
	asJSON bool
	who    *tenancy.Caller
}

// fail answers the request with err (classified).
func (c *call) fail(err error) { respondError(c.rp, c.asJSON, Classify(err)) }

// timed marks each request h gets with operation op and its arrival time.
func (s *Service) timed(op string, h func(request)) func(request) {
	return func(r request) { h(timedRequest{request: r, op: op, start: time.Now()}) }
}

// guard runs before every handler. It drops a request whose reply subject
// the service must not answer (see replyAllowed) before any work is done
// for it (a request without a reply subject is served unanswered, as a
// publish), then serves it.
func (s *Service) guard(h func(*call)) func(request) { return s.guardPlaced(h, false) }

// guardPlaced is guard for an endpoint whose subject names an aggregate
// (placed): with a Router, a request for an aggregate another node serves
// is forwarded there, so one node serves each aggregate's reads and writes.
func (s *Service) guardPlaced(h func(*call), placed bool) func(request) {
	return func(r request) {
		if rp := r.Reply(); rp != "" && !replyAllowed(rp, s.cfg.ReplyPrefixes) {
			s.metrics.RefusedReplies.Inc()
			s.logger.Warn("request dropped: reply subject is not an inbox", "subject", r.Subject(), "reply", rp)
			return
		}
		if placed && s.router != nil {
			if id, ok := aggregateOf(r.Subject()); ok && !s.router.Serves(id) {
				s.forward(r, id, func() { s.serve(r, h) })
				return
			}
		}
		s.serve(r, h)
	}
}

// serve establishes the caller, then runs h: the caller a request served
// with Do was given, else the Unrestricted caller without tenants, else
// the principal the server-stamped identity maps to (403 when there is
// none).
func (s *Service) serve(r request, h func(*call)) {
	c := &call{r: r, rp: s.replyTo(r), asJSON: wantsJSON(r.Headers())}
	if l, ok := localOf(r); ok && l.who != nil {
		c.who = l.who // verified by its transport
	} else if s.tenants == nil {
		c.who = s.anyone
	} else {
		who, err := s.tenants.Identify(nats.Header(r.Headers()))
		if err != nil {
			s.metrics.Denied.WithLabelValues("identity").Inc()
			c.fail(err)
			return
		}
		c.who = who
	}
	h(c)
}

// sessionHandler serves a command of a session's actor (newReq makes its
// request).
func (s *Service) sessionHandler(newReq func() proto.Message) func(*call) {
	return func(c *call) {
		r, asJSON, rp := c.r, c.asJSON, c.rp
		id, err := sessionID(r.Subject())
		if err != nil {
			respondError(rp, asJSON, Classify(err))
			return
		}
		body := newReq()
		if !s.readBody(r, rp, asJSON, body) {
			return
		}
		if req, ok := body.(*memoryv1.CreateSessionRequest); ok && !c.who.Admin() {
			if req.GetAgentId() == "" {
				// An agent's sessions are its own: the agent comes from the
				// connection, never from the body.
				req.AgentId = c.who.Agent
			}
			if s.rm == nil {
				s.handOff(rp, asJSON, func(reply actors.ReplyFunc) error { return s.d.Dispatch(id, c.who, req, reply) })
				return
			}
			s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
				if err := s.checkSessionQuota(c.who, req); err != nil {
					reply(nil, err)
					return
				}
				s.dispatch(id, c.who, req, s.noteSession(c.who, id, reply))
			})
			return
		}
		if app, ok := body.(*memoryv1.AppendRequest); ok {
			offload, q := s.needsOffload(app), latestUserText(app)
			if offload || (q != "" && s.rm != nil) {
				s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
					s.appendWithSearch(ctx, c.who, id, app, offload, q, s.noteSession(c.who, id, s.consolidateAfter(id, app, reply)))
				})
				return
			}
		}
		if _, ok := body.(*memoryv1.ContextRequest); ok {
			s.handOff(rp, asJSON, func(reply actors.ReplyFunc) error { return s.d.Dispatch(id, c.who, body, s.hydrated(reply)) })
			return
		}
		s.handOff(rp, asJSON, func(reply actors.ReplyFunc) error {
			return s.d.Dispatch(id, c.who, body, s.noteSession(c.who, id, s.consolidateAfter(id, body, reply)))
		})
	}
}

// hydrated wraps the reply of a context request: the memory section's
// texts are read from the scopes (segmented.HydrateMemory; the log keeps
// references, so an erased entry is in no context). Without the
// projection the referenced items are left out.
func (s *Service) hydrated(reply actors.ReplyFunc) actors.ReplyFunc {
	return func(m proto.Message, err error) {
		if cx, ok := m.(*memoryv1.ContextReply); ok && err == nil {
			var src segmented.Sources
			if s.entries != nil {
				src.Entry = s.entries.EntryText
			}
			if s.rm != nil {
				src.Message = s.rm.MessageAt
			}
			m = segmented.Hydrate(cx, src)
		}
		reply(m, err)
	}
}

// readBody decodes r's body into body; on failure it answers 400 and
// reports false.
func (s *Service) readBody(r request, rp replier, asJSON bool, body proto.Message) bool {
	if err := decode(r.Data(), asJSON, body); err != nil {
		respondError(rp, asJSON, decodeError(body, err))
		return false
	}
	return true
}

// answer is the ReplyFunc that answers rp and marks the request done.
func (s *Service) answer(rp replier, asJSON bool) actors.ReplyFunc {
	return func(m proto.Message, err error) {
		defer s.inflight.done()
		if err != nil {
			respondError(rp, asJSON, Classify(err))
			return
		}
		respond(rp, asJSON, m)
	}
}

// handOff gives a request to an actor without blocking the subscription;
// the actor answers when the command is stored (or refused).
func (s *Service) handOff(rp replier, asJSON bool, dispatch func(actors.ReplyFunc) error) {
	if !s.begin(rp, asJSON) {
		return
	}
	reply := s.answer(rp, asJSON)
	if err := dispatch(reply); err != nil {
		reply(nil, err)
	}
}

// begin counts one request in flight, unless the service stopped: then it
// answers 503 and reports false. While Stop drains, requests still begin:
// they are forwarded to their new owners or served (a stopping
// node forwards what still reaches it).
func (s *Service) begin(rp replier, asJSON bool) bool {
	if !s.inflight.begin() {
		respondError(rp, asJSON, &Error{Code: 503, Message: "the node is stopping; retry on another node or later"})
		return false
	}
	return true
}

// sessionID extracts and validates <id> of mem.v1.session.<id>.<op>.
func sessionID(subject string) (string, error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 {
		return "", &Error{Code: 400, Field: "session_id", Message: "subject must be mem.v1.session.<id>.<op>"}
	}
	if err := events.ValidateID("session_id", parts[3]); err != nil {
		return "", err
	}
	return parts[3], nil
}

// stopQuiet is how long Stop waits with no request in flight and none
// beginning before it refuses new ones: the messages its drained
// subscriptions still held are delivered to their handlers by then (they
// reached this client before the flush that follows the drain).
const stopQuiet = 50 * time.Millisecond

// Stop stops taking requests (draining the subscriptions) and waits, bounded
// by ctx, for the replies of those already dispatched. What the drained
// subscriptions and forwards from other nodes still deliver meanwhile is
// served as usual (forwarded, with a Router, to the aggregate's new owner);
// only after stopQuiet without a request (at once when no other node is
// live) are later ones refused (503).
func (s *Service) Stop(ctx context.Context) error {
	err := s.svc.Stop()
	// Once the server answered the flush it has processed the drains'
	// unsubscribes: what it routed here before is in this client already.
	// (Best effort: a connection that is down delivers nothing more.)
	fctx, cancel := context.WithTimeout(ctx, time.Second)
	_ = s.nc.FlushWithContext(fctx)
	cancel()
	// Watch polls in flight answer at once, with what they have.
	s.stopWatches()
	defer s.cancel()
	// A node alone (no Router, or one that says no other node is live) has
	// nobody to send late requests to: it stops once nothing is in flight.
	quiet := stopQuiet
	if a, ok := s.router.(interface{ Alone() bool }); s.router == nil || (ok && a.Alone()) {
		quiet = 0
	}
	if werr := s.inflight.closeWhenQuiet(ctx, quiet); werr != nil {
		err = errors.Join(err, fmt.Errorf("api: waiting for in-flight requests: %w", werr))
	}
	s.workers.Stop()
	if s.cons != nil {
		s.cons.Close()
	}
	return err
}

// checkSessionQuota refuses (413 max_sessions) a session beyond the
// caller's bound, counted by its agent (or by the session's user for a
// caller without an agent). The count comes from the projection, so a
// burst of creates may pass the bound by what the projection has not
// applied yet (milliseconds).
func (s *Service) checkSessionQuota(who *tenancy.Caller, req *memoryv1.CreateSessionRequest) error {
	limit := who.Limits.MaxSessions
	user, agent := req.GetUserId(), who.Agent
	if agent == "" && user == "" {
		return nil // refused by the session actor (CreateSession)
	}
	n, err := s.rm.CountSessions(user, agent, limit)
	if err != nil {
		return err
	}
	if n >= limit {
		return &Error{Code: 413, Field: "max_sessions", Message: fmt.Sprintf("this caller has %d sessions, the most it may have", n)}
	}
	return nil
}
