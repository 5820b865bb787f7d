package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/api/dispatch"
	"github.com/agentmem/agentmem/api/natsapi"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/internal/dirlock"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/llmsummary"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/largedata"
	"github.com/agentmem/agentmem/placement"
	"github.com/agentmem/agentmem/projections"
	"github.com/agentmem/agentmem/tenancy"
)

// Node is one running agentmem node.
type Node struct {
	cfg    Config
	logger *slog.Logger
	// marks are the partitions' known last sequences and plog the log in
	// partitions (nil: the log is one stream; partitions.go).
	marks *partitionMarks
	plog  *events.PartitionedLog
	// lock is the data dir's exclusive lock (nil when the node uses no data
	// dir: external NATS and no projector); released last by Shutdown.
	lock     *dirlock.Lock
	embedded *natsembed.Server
	nc       *nats.Conn
	// apiNC is the service's connection (nc when the operator gave it no
	// user of its own).
	apiNC    *nats.Conn
	dir      *actors.Directory
	svc      *api.Service
	disp     *dispatch.Dispatcher // svc as its transports see it
	natsAPI  *natsapi.Server      // serves disp over NATS
	http     *http.Server
	httpDone chan struct{}
	httpAddr string
	store    *projections.Store
	proj     *projections.Projector
	// split holds this node's corpus partition files instead of store and
	// proj with --projection-partitions (corpusfiles.go), splitRM the
	// router over them and the other nodes (corpusread.go).
	split   *corpusFiles
	splitRM *corpusReadModel
	// storage watches the disk, JetStream and the projector (storage.go);
	// logHealth the log stream (loghealth.go).
	// placement places aggregates on the cluster's nodes; internalSubs
	// serve the other nodes (forwarded requests, calls on actors).
	placement    *placement.Table
	internalSubs []*nats.Subscription
	// internalLast is when the last message reached internalSubs (unix
	// nanoseconds): a leaving node keeps them until they go quiet.
	internalLast atomic.Int64
	// serving is placement once opened, for the actors (Deps.Serves),
	// which start before it.
	serving atomic.Pointer[placement.Table]
	// relays counts the calls relayed to another node (callServer).
	relays    sync.WaitGroup
	storage   *storageWatch
	logHealth logChecker
	// retention and compactor are the archive/delete-after sweep and the
	// bounded log's compactor (nil when off); their Run loops own them.
	retention   *archiveSweep
	compactor   *logCompactor
	projRunning atomic.Bool // proj.Run is running (runProjector)
	// bg runs the background loops (projector, large-data sweeper, log
	// health check); bgCancel stops them and bgWG waits for them.
	bg       context.Context
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup
	// eraser runs erasures, compactions and their resumption; resumeFrom
	// is where the next resumption reads the ledger from (node/erasure.go):
	// only resumeOnce touches it, at start and then from resumeLoop's
	// goroutine.
	eraser     *erasure.Coordinator
	resumeFrom uint64
	// resumeFromParts is resumeFrom per partition (the log in K > 1
	// partitions).
	resumeFromParts []uint64
	url             string
	Registry        *prometheus.Registry

	// inspector serves /ui/ on the HTTP listener (closed by Shutdown).
	inspector *inspector.Inspector
	// uiNC is the single-user inspector's own connection: a client of
	// the API like any other (nil with tenants: viewers bring their own).
	uiNC *nats.Conn
	// log is the event log as the actors write it (time travel reads it).
	log events.Log
	// reader reads the whole log (the inspector's time-travel window and
	// removal ledger); stream is its name.
	reader events.StreamReader
	stream string

	// waiting is what Start waits for (nil once it returned): /healthz
	// answers 503 "starting" with it. handler is what the HTTP listener
	// serves: /healthz and /metrics while starting, everything after.
	waiting atomic.Pointer[string]
	handler atomic.Pointer[http.ServeMux]

	shutdownOnce sync.Once
	shutdownErr  error
}

// LockWhat is how a node names itself in its data dir's lock file.
const LockWhat = "agentmem node"

// Start brings a node up; on error everything started so far is stopped.
// A node that uses its data dir (embedded NATS store, projection file)
// first takes the dir's exclusive lock: while another process holds it,
// Start fails at once with an error wrapping dirlock.ErrLocked that names
// the holder's pid, host and start time.
//
// A NATS cluster that cannot take the node's streams and buckets yet (not
// up, no leader elected, too few peers) is waited for, step by step
// (untilReady), until ctx ends; meanwhile /healthz answers 503 with what
// the node waits for.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (n *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	n = &Node{cfg: cfg, logger: logger, Registry: prometheus.NewRegistry()}
	n.setWaiting("start")
	n.bg, n.bgCancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			_ = n.Shutdown(context.Background())
			n = nil
		}
	}()
	n.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Before anything opens a file in the data dir: two nodes on one store
	// acknowledge different writes at the same stream sequence.
	if cfg.NATSURL == "" || cfg.Projector {
		if n.lock, err = dirlock.Acquire(cfg.DataDir, LockWhat); err != nil {
			return n, err
		}
	}

	var tenants *tenancy.Directory
	if cfg.Tenants != "" {
		if tenants, err = tenancy.Load(cfg.Tenants); err != nil {
			return n, fmt.Errorf("node: %w", err)
		}
		logger.Info("tenancy on", "tenants", cfg.Tenants, "principals", tenants.Principals())
	}
	if cfg.HTTPAddr != "" {
		if err = n.listenHTTP(); err != nil {
			return n, err
		}
	}
	if err = n.connect(ctx, cfg); err != nil {
		return n, err
	}
	js, err := jetstream.New(n.nc)
	if err != nil {
		return n, fmt.Errorf("node: jetstream: %w", err)
	}
	if err = n.untilReady(ctx, "JetStream", func(ctx context.Context) error {
		_, err := js.AccountInfo(ctx)
		return err
	}); err != nil {
		return n, fmt.Errorf("node: jetstream: %w", err)
	}
	// The projection first: a log that ends before its checkpoint was
	// deleted or truncated, and must not be recreated empty and written to.
	if cfg.Projector && cfg.ProjectionPartitions == 0 {
		if err = n.openProjection(ctx, js); err != nil {
			return n, err
		}
	}
	lcfg := events.DefaultJetStreamConfig()
	lcfg.Stream = cfg.Stream
	lcfg.Replicas = cfg.Replicas
	lcfg.DuplicateWindow = cfg.DuplicateWindow
	lcfg.DenyPurge = cfg.DenyPurge
	lcfg.AllowDelete = cfg.LogAllowDelete
	lcfg.Logger = logger
	// baseLog is what the actors write to, wholeLog the reader of the
	// whole log (watch, erasure): the one stream, or with the log in
	// partitions the routed log and no whole reader (partitions.go).
	var (
		baseLog  events.Log
		wholeLog events.StreamReader
		marks    *partitionMarks
	)
	if cfg.LogPartitions > 1 {
		mlog, err := n.openPartitionedLog(ctx, js, lcfg)
		if err != nil {
			return n, err
		}
		baseLog, wholeLog, marks = mlog, noWholeLog{}, mlog.marks
		n.marks, n.plog = marks, mlog.PartitionedLog
		store := n.store // nil without a projection of the whole log
		n.logHealth = newPartitionHealth(mlog.PartitionedLog, store, logger, n.Registry)
		n.goBackground("log health check stopped", n.logHealth.Run)
		if cfg.Replicas > 1 {
			var names []string
			for i := range cfg.LogPartitions {
				names = append(names, events.PartitionStream(cfg.Stream, i, cfg.LogPartitions))
			}
			n.goBackground("spreading the log streams' leaders stopped", spreadLeaders(n.nc, js, names, logger))
		}
	} else {
		var jsLog *events.JetStreamLog
		if err = n.untilReady(ctx, "stream "+cfg.Stream, func(ctx context.Context) (err error) {
			jsLog, err = events.NewJetStreamLog(ctx, js, lcfg)
			return err
		}); err != nil {
			return n, replicasError(cfg.Replicas, err)
		}
		var applied func() uint64
		if n.store != nil {
			applied = n.store.AppliedSeq
		}
		n.logHealth = newLogHealth(jsLog, cfg.Stream, applied, logger, n.Registry)
		n.goBackground("log health check stopped", n.logHealth.Run)
		baseLog, wholeLog = jsLog, jsLog
	}
	var snaps *events.KVSnapshotStore
	if err = n.untilReady(ctx, "bucket "+cfg.Stream+"_SNAPSHOTS", func(ctx context.Context) (err error) {
		snaps, err = events.NewKVSnapshotStore(ctx, js, cfg.Stream+"_SNAPSHOTS", cfg.Replicas)
		return err
	}); err != nil {
		return n, replicasError(cfg.Replicas, err)
	}
	codec := events.NewCodec()
	tok, err := segmented.NewTokenizer()
	if err != nil {
		return n, fmt.Errorf("node: tokenizer: %w", err)
	}
	// The projector starts before the actors: it serves their command
	// index (exactly-once retries at any age).
	var cmds actors.CommandIndex
	var split *corpusReadModel
	switch {
	case cfg.Projector && cfg.ProjectionPartitions > 0:
		if split, err = n.startSplit(js, codec, marks); err != nil {
			return n, err
		}
		cmds = split
	case cfg.Projector:
		if err = n.startProjector(js, codec); err != nil {
			return n, err
		}
		cmds = commandIndex{p: n.proj, s: n.store}
	default:
		logger.Warn("no projector in this process: a retried command is recognised only among its aggregate's last 64 commands")
	}
	n.startStorageWatch(js)
	log := gatedLog{Log: baseLog, w: n.storage}
	n.log = log
	n.reader, n.stream = gatedReader{StreamReader: wholeLog, w: n.storage}, cfg.Stream
	if n.plog != nil {
		n.reader = partitionedReader{gatedReader: gatedReader{StreamReader: wholeLog, w: n.storage}, l: n.plog}
	}
	var rewriter actors.Rewriter
	if cfg.LLM.BaseURL != "" {
		if rewriter, err = llmsummary.New(cfg.LLM); err != nil {
			return n, err
		}
		cfg.Actors.RewriteTimeout = cfg.LLM.Timeout
	}
	var libs segmented.LibrarySource
	switch {
	case split != nil:
		libs = libraries(split)
	case n.store != nil:
		libs = libraries(n.store)
	}
	n.dir, err = actors.New(cfg.Actors, actors.Deps{
		Libraries: libs,
		Now:       cfg.Now,
		Rewriter:  rewriter,
		Commands:  cmds,
		Log:       log,
		Snapshots: gatedSnapshots{SnapshotStore: snaps, w: n.storage},
		Codec:     codec,
		Tokenizer: tok,
		Metrics:   actors.NewMetrics(n.Registry),
		Logger:    logger,
		Serves: func(id string) bool {
			t := n.serving.Load()
			return t == nil || t.Holds(id)
		},
	})
	if err != nil {
		return n, err
	}
	dcfg := cfg.Data
	dcfg.Bucket = cfg.Stream + "_DATA"
	dcfg.Replicas = cfg.Replicas
	dcfg.Logger = logger
	switch {
	case split != nil:
		dcfg.Holder = sessionHolder{s: split}
	case cfg.Projector:
		dcfg.Holder = sessionHolder{s: n.store}
	}
	var data *largedata.Store
	if err = n.untilReady(ctx, "object store "+dcfg.Bucket, func(ctx context.Context) (err error) {
		data, err = largedata.New(ctx, js, log, dcfg, time.Now)
		return err
	}); err != nil {
		return n, replicasError(cfg.Replicas, err)
	}
	n.goBackground("large-data sweeper stopped", data.Run)
	if err = n.openPlacement(ctx, js); err != nil {
		return n, err
	}
	n.serving.Store(n.placement)
	acfg := api.DefaultConfig()
	acfg.ConsolidateOnTerminate, acfg.ConsolidateEveryTurns = cfg.Consolidation.OnTerminate, cfg.Consolidation.EveryTurns
	acfg.EpisodeSummaryAfter = cfg.Consolidation.SummaryAfter
	acfg.LogPartitions = max(cfg.LogPartitions, 1)
	if cfg.Consolidation.LLM && cfg.LLM.BaseURL != "" {
		acfg.Extractor = llmExtractor(cfg.LLM)
	}
	if cfg.LLM.BaseURL != "" { // used only by scopes whose conflict strategy is "llm"
		acfg.Merger = llmMerger(cfg.LLM)
	}
	local := answerBy{d: n.dir, w: n.storage, timeout: cfg.Actors.StoreTimeout}
	placed := placedDispatch{local: local, t: n.placement, nc: n.nc, timeout: acfg.ForwardTimeout}
	dstore := dataStore{s: data, w: n.storage, max: dcfg.MaxBytes}
	deps := api.Deps{Dispatcher: placed, Scopes: placed, Router: router{t: n.placement, w: n.storage, nc: n.nc}, Data: dstore, Reranker: cfg.Reranker, Logger: logger,
		Metrics: api.NewMetrics(n.Registry), Tenants: tenants, Watcher: n.watcher(gatedReader{StreamReader: wholeLog, w: n.storage}, maxWatchReads)}
	edeps := erasure.Deps{Log: log, Reader: wholeLog, Codec: codec, Actors: placed, Data: dstore}
	if marks != nil {
		// Each partition's ledger is resumed on its own; a removal's
		// receipt marks its aggregate's partition (the owner may be
		// another node).
		edeps.Streams = make([]erasure.Stream, n.plog.Partitions())
		for i := range edeps.Streams {
			edeps.Streams[i] = n.plog.Partition(i)
		}
		edeps.Actors = markedErasures{Actors: placed, marks: marks}
	}
	if split != nil {
		deps.ReadModel = split
		deps.Entries = split
		edeps.ReadModel = split
	} else if cfg.Projector {
		rm := readModel{p: n.proj, s: n.store, logger: logger, marks: marks}
		if cfg.Embeddings.BaseURL != "" {
			if rm.q, err = n.startVectors(); err != nil {
				return n, err
			}
		}
		deps.ReadModel = rm
		deps.Entries = rm
		edeps.ReadModel = rm
	}
	k := acfg.LogPartitions
	token := func(id string, seq uint64) string { return consistency.Format(k, events.LogPartition(id, k), seq) }
	if n.eraser, err = erasure.New(erasure.Config{Now: cfg.Now, Step: cfg.EraseStep, Token: token}, edeps); err != nil {
		return n, err
	}
	deps.Eraser = n.eraser
	// Erasures a crash left half done are finished before the API serves
	// (and, should an owner be unreachable now, later: resumeLoop).
	resumed := n.resumeOnce(ctx)
	n.goBackground("erasure resumption stopped", func(ctx context.Context) error { return n.resumeLoop(ctx, resumed) })
	ncfg := natsapi.DefaultConfig()
	if tenants != nil {
		// Every tenant request crosses a service import, whose reply
		// subject the server rewrites to _R_.…: nothing else is answered.
		ncfg.ReplyPrefixes = []string{"_R_."}
	}
	acfg.MaxPayload = n.apiNC.MaxPayload()
	if n.svc, err = api.New(deps, acfg); err != nil {
		return n, err
	}
	n.disp = dispatch.New(n.svc)
	if n.natsAPI, err = natsapi.Start(n.apiNC, n.disp, ncfg); err != nil {
		_ = n.svc.Stop(ctx)
		n.svc = nil
		return n, err
	}
	// The service's subscriptions are in place once the server saw them:
	// a client's first request after Start must not get "no responders".
	if err = n.apiNC.Flush(); err != nil {
		return n, fmt.Errorf("node: flush: %w", err)
	}
	calls := callServer{local: local, t: n.placement, tenants: tenants, anyone: tenancy.Unrestricted(tenancy.DefaultLimits()),
		timeout: acfg.ForwardTimeout, relays: &n.relays,
		nc: n.apiNC, logger: logger}
	if err = n.serveInternal(calls); err != nil {
		return n, err
	}
	if err = n.nc.Flush(); err != nil {
		return n, fmt.Errorf("node: flush: %w", err)
	}
	if err = n.readyPlacement(ctx); err != nil {
		return n, err
	}
	if n.split != nil {
		n.goBackground("split projection stopped", n.split.Run)
	}
	// Sessions a crash left terminated but unconsolidated,
	// once the projection holds the log as it is now (its session index
	// lists them).
	var logEnd uint64
	if marks != nil {
		logEnd = marks.highest() // a wait for it waits for each partition's last sequence
	} else if st, err := js.Stream(ctx, cfg.Stream); err == nil {
		logEnd = st.CachedInfo().State.LastSeq
	}
	n.svc.ResumeConsolidation(logEnd)
	if (cfg.ArchiveAfter > 0 || cfg.DeleteAfter > 0) && cfg.Projector {
		var sessions sessionLister = n.store
		if split != nil {
			sessions = split // every node sweeps every partition, as each sweeps its whole projection
		}
		sw := &archiveSweep{sessions: sessions, d: placed, eraser: n.eraser,
			after: cfg.ArchiveAfter, deleteAfter: cfg.DeleteAfter,
			interval: archiveSweepInterval(cfg.ArchiveAfter, cfg.DeleteAfter),
			timeout:  acfg.ForwardTimeout + 4*cfg.Actors.StoreTimeout, now: cfg.now, logger: logger}
		n.retention = sw
		n.goBackground("archive sweep stopped", sw.Run)
	}
	if cfg.LogWindow > 0 && cfg.Projector {
		lc := &logCompactor{js: js, stream: cfg.Stream, partitions: cfg.LogPartitions, eraser: n.eraser, window: cfg.LogWindow, interval: compactInterval(cfg.LogWindow),
			timeout: acfg.ForwardTimeout + 4*cfg.Actors.StoreTimeout, now: cfg.now, logger: logger}
		n.compactor = lc
		n.goBackground("log compaction stopped", lc.Run)
	}
	if cfg.HTTPAddr != "" {
		if err = n.serveAll(tenants); err != nil {
			return n, err
		}
		logger.Info("inspector", "url", "http://"+n.httpAddr+inspector.Prefix, "access", map[bool]string{true: "admins of the tenants file (NATS credentials)", false: "loopback clients"}[tenants != nil])
	}
	n.waiting.Store(nil)
	logger.Info("node ready", "nats", n.url, "stream", cfg.Stream, "replicas", cfg.Replicas, "metrics", cfg.HTTPAddr,
		"node_id", n.placement.NodeID(), "partitions", cfg.Placement.Partitions)
	return n, nil
}

// openProjection opens the projection file and refuses a log stream that
// ends before its checkpoint, or is missing while the projection holds
// events (projections.ErrLogBehind): the log was deleted, purged or
// replaced, and the node must not recreate it empty and carry on. A missing
// stream with an empty projection is a new node: NewJetStreamLog creates it.
func (n *Node) openProjection(ctx context.Context, js jetstream.JetStream) error {
	if err := os.MkdirAll(n.cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("node: data dir: %w", err)
	}
	store, err := projections.Open(filepath.Join(n.cfg.DataDir, ProjectionFile))
	if err != nil {
		return err
	}
	n.store = store
	if room := n.projectionRoom(); room != nil {
		store.SetRoom(room)
	}
	if n.cfg.LogPartitions > 1 {
		return n.untilReady(ctx, "streams of "+n.cfg.Stream+" (the projection's check)", func(ctx context.Context) error {
			return n.checkPartitionedLog(ctx, js, store)
		})
	}
	if k := store.LogPartitions(); k != 1 {
		return fmt.Errorf("node: %w: %s records %d partitions, --log-partitions is 1", projections.ErrLogPartitions, store.Path(), k)
	}
	return n.untilReady(ctx, "stream "+n.cfg.Stream+" (the projection's check)", func(ctx context.Context) error {
		return n.checkLog(ctx, js, store.AppliedSeq())
	})
}

// projectionRoom bounds a projection file's growth by the free space
// above --min-free-bytes (nil: no floor). The projection's own growth
// stops at the floor too: the gate reckons what it owes for the appends
// let through, and when that reckoning falls short (bbolt cannot reuse
// pages a long read still holds) its writes wait, retried, for space
// rather than take the floor. A CI run under load saw the projection,
// then allowed the floor's lower half, leave 1.99 MB of a 2 MiB floor.
func (n *Node) projectionRoom() projections.RoomFunc {
	minFree := n.cfg.MinFreeBytes
	if minFree < 0 {
		return nil
	}
	dir := n.cfg.DataDir
	return func() int64 {
		var fs syscall.Statfs_t
		if err := syscall.Statfs(dir, &fs); err != nil {
			return -1
		}
		return int64(fs.Bavail)*int64(fs.Bsize) - minFree
	}
}

// checkLog refuses a log stream a migration or compaction left half-done,
// or one that ends before the projection's checkpoint applied.
func (n *Node) checkLog(ctx context.Context, js jetstream.JetStream, applied uint64) error {
	// A log that `replay migrate-log` left half-done is not whole: say so
	// rather than "truncated", and never create an empty one over its copy.
	if err := events.CheckNotMigrating(ctx, js, n.cfg.Stream); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	// Nor one `replay compact` left half-done (the snapshot bucket and the
	// object store too: creating them empty would hide their only copy).
	if err := events.CheckNoCompaction(ctx, js); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if _, err := projections.CheckStream(ctx, js, n.cfg.Stream, applied); err != nil &&
		(applied > 0 || !errors.Is(err, jetstream.ErrStreamNotFound)) {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// startProjector runs the projector on the opened projection beside the
// actors. If it stops on a record it cannot apply, or on a log that ends
// before its checkpoint, queries keep answering from what was applied (and
// min_seq waits time out with 503); the error is logged with the stream
// sequence.
func (n *Node) startProjector(js jetstream.JetStream, codec *events.Codec) error {
	pcfg := projections.DefaultConfig()
	pcfg.Stream = n.cfg.Stream
	pcfg.Partitions = max(n.cfg.LogPartitions, 1)
	if n.cfg.ProjectorBatch > 0 {
		pcfg.BatchEvents = n.cfg.ProjectorBatch
	}
	var err error
	if n.proj, err = projections.NewProjector(pcfg, js, n.store, codec, n.logger); err != nil {
		return err
	}
	n.registerProjectionMetrics()
	n.runProjector()
	return nil
}

// registerProjectionMetrics exports how far the projection is: its applied
// sequence, and its lag behind the log (read from the stream at each scrape;
// -1 while the stream cannot be read).
func (n *Node) registerProjectionMetrics() {
	p := n.proj
	n.registerProjectionGauges(p.AppliedSeq, p.Lag)
}

// registerProjectionGauges registers the projection's applied sequence and
// lag gauges over applied and lag.
func (n *Node) registerProjectionGauges(applied func() uint64, lag func(context.Context) (uint64, error)) {
	n.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentmem_projection_applied_seq",
			Help: "The last log sequence the projection applied (search, recall, lists and min_seq reads see up to it)."},
			func() float64 { return float64(applied()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentmem_projection_lag",
			Help: "Log sequences stored and not yet applied to the projection (the stream's last sequence minus the applied one; -1 while the stream cannot be read)."},
			func() float64 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				l, err := lag(ctx)
				if err != nil {
					return -1
				}
				return float64(l)
			}),
	)
}

// runProjector runs the projector unless it runs already. Called again by
// the storage watch after it restarted JetStream: a projector that read
// while the streams were reloading may have stopped on a stream "not
// found". Only from Start or a background loop (bgWG is above zero).
func (n *Node) runProjector() {
	if n.bg.Err() != nil || !n.projRunning.CompareAndSwap(false, true) {
		return
	}
	n.goBackground("projector stopped; queries answer from what was applied", func(ctx context.Context) error {
		defer n.projRunning.Store(false)
		return n.proj.Run(ctx)
	})
}

// startStorageWatch runs the storage watch (storage.go): the disk under
// the data dir, JetStream, the projector; the gate and /healthz read it.
func (n *Node) startStorageWatch(js jetstream.JetStream) {
	var p projector
	var retries interface{ WriteRetries() uint64 }
	if n.proj != nil {
		p, retries = n.proj, n.proj
	}
	var dirs []string
	if n.cfg.DataDir != "" && (n.embedded != nil || n.proj != nil) {
		dirs = []string{n.cfg.DataDir}
	}
	n.storage = newStorageWatch(n.embedded, js, dirs, n.cfg.MinFreeBytes, n.cfg.HealthInterval, p, n.logger,
		newStorageMetrics(n.Registry, retries))
	n.storage.stream, n.storage.replicated = n.cfg.Stream, n.cfg.Replicas > 1
	if n.storage.replicated {
		n.storage.bucket = "KV_" + placementBucket(n.cfg) // a KV bucket's stream
	}
	if n.marks != nil {
		// Set before the watch runs: it reads them.
		n.storage.setPartitions(n.cfg.Stream, n.cfg.LogPartitions) // the quorum probe asks each partition's stream
	}
	if p != nil {
		n.storage.revive = n.runProjector
	}
	n.goBackground("storage watch stopped", n.storage.Run)
}

// startVectors runs the vector indexer beside the projector (embeddings of
// every message, kept in the projection) and returns the client that
// embeds queries.
func (n *Node) startVectors() (*embed.Client, error) {
	client, err := embed.New(n.cfg.Embeddings)
	if err != nil {
		return nil, err
	}
	model := client.Model()
	if d := n.cfg.Embeddings.Dimensions; d > 0 {
		model = fmt.Sprintf("%s/%d", model, d)
	}
	ix, err := projections.NewVectorIndexer(projections.VectorConfig{Model: model, Batch: n.cfg.Embeddings.BatchSize},
		n.store, client, n.proj, n.logger)
	if err != nil {
		return nil, err
	}
	n.goBackground("vector indexer stopped; search fuses the vectors stored so far", ix.Run)
	n.logger.Info("embeddings on", "url", n.cfg.Embeddings.BaseURL, "model", model)
	return client, nil
}

// goBackground runs loop until Shutdown; an error it returns is logged as msg.
func (n *Node) goBackground(msg string, loop func(context.Context) error) {
	n.bgWG.Add(1)
	go func() {
		defer n.bgWG.Done()
		if err := loop(n.bg); err != nil {
			n.logger.Error(msg, "err", err)
		}
	}()
}

// WaitProjected returns once the in-process projector applied stream
// sequence seq (or ctx ends). Without a projector it fails at once. With
// the log in partitions it waits, in each, for seq or the highest
// sequence the node knows the partition holds, whichever is lower
// (^uint64(0): everything stored when the node started or written by it).
func (n *Node) WaitProjected(ctx context.Context, seq uint64) error {
	if n.splitRM != nil {
		return n.splitRM.WaitFor(ctx, seq)
	}
	if n.proj == nil {
		return errors.New("node: no projector in this process")
	}
	return readModel{p: n.proj, marks: n.marks}.WaitFor(ctx, seq)
}

// Inspector is the /ui/ handler (nil without an HTTP listener).
func (n *Node) Inspector() http.Handler {
	if n.inspector == nil {
		return nil
	}
	return n.inspector
}

// MetricsAddr is the address /metrics is served on ("" when disabled).
func (n *Node) MetricsAddr() string { return n.httpAddr }

// ClientURL is the NATS URL agent workers connect to.
func (n *Node) ClientURL() string { return n.url }

// Shutdown drains in-flight requests, snapshots and stops every actor, then
// stops the projector (mid-batch: its transaction rolls back) and the other
// background loops, and NATS. ctx bounds the drain; a loop still running when
// it ends leaves the projection file open (as after a crash) and is
// reported in the error. It is idempotent: later
// calls return the first call's result.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownOnce.Do(func() { n.shutdownErr = n.shutdown(ctx) })
	return n.shutdownErr
}

func (n *Node) shutdown(ctx context.Context) error {
	var errs []error
	leaving := time.Now()
	if n.placement != nil && n.svc != nil {
		// Hand the partitions over first: requests for them are forwarded
		// to their next owners while this node drains.
		if err := n.placement.Leave(ctx); err != nil {
			errs = append(errs, fmt.Errorf("node: handover: %w", err))
		}
	}
	// Forwards and calls from the other nodes that still reach this one are
	// served (sent on to the new owners) until they stop coming and the
	// drain ends; then they find no responder here, and the senders wait
	// for the new owner.
	errs = append(errs, n.internalQuiet(ctx, leaving), n.drainInternal(ctx))
	if n.natsAPI != nil {
		errs = append(errs, n.natsAPI.Stop(ctx)) // and the service
	}
	if n.dir != nil {
		errs = append(errs, n.dir.Close(ctx))
	}
	if n.inspector != nil {
		n.inspector.Close() // ends the live streams, which Shutdown waits for
	}
	if n.http != nil {
		errs = append(errs, n.http.Shutdown(ctx))
		<-n.httpDone
	}
	if n.uiNC != nil {
		n.uiNC.Close()
	}
	stopped := true
	if n.bgCancel != nil {
		n.bgCancel()
		// Cancelled, the loops return at their next check: they get
		// backgroundGrace even when the drain used up (or ctx cancelled)
		// the time, so that a drain that ran out still closes the
		// projection file.
		gctx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ctx.Err() != nil || (ok && time.Until(dl) < backgroundGrace) {
			gctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), backgroundGrace)
		}
		if err := n.waitBackground(gctx); err != nil {
			errs, stopped = append(errs, err), false
		}
		cancel()
	}
	if n.store != nil && stopped {
		// Not while a loop may still write it: bbolt's Close would wait for
		// its transaction. Unclosed, the file is as after a crash (each
		// commit is whole; the projector resumes from its checkpoint).
		errs = append(errs, n.store.Close())
	}
	if n.apiNC != nil && n.apiNC != n.nc {
		n.apiNC.Close()
	}
	if n.nc != nil {
		n.nc.Close()
	}
	if n.embedded != nil {
		n.embedded.Shutdown()
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close())
	}
	return errors.Join(errs...)
}

// drainInternal drains the internal subscriptions and waits, bounded by
// ctx, until their last messages were handled and the calls relayed from
// them answered.
func (n *Node) drainInternal(ctx context.Context) error {
	for _, s := range n.internalSubs {
		if err := s.Drain(); err != nil {
			_ = s.Unsubscribe()
		}
	}
	for _, s := range n.internalSubs {
		for s.IsValid() {
			select {
			case <-ctx.Done():
				return fmt.Errorf("node: draining the internal subscriptions: %w", ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	done := make(chan struct{})
	go func() { n.relays.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node: waiting for relayed calls: %w", ctx.Err())
	}
}

// internalQuiet returns, once this node handed its partitions over (it
// began at leaving), when no forward or call reached it for
// internalQuietFor placement ticks, or a lease after leaving, or when ctx
// ends (its error). The other nodes keep sending here until their watch
// of the placement shows the partitions handed over, a little after this
// node deleted their leases; a message sent while this node unsubscribes
// is lost without an answer (the sender's server still routes it to this
// node's server, where nothing takes it), and its sender waits for the
// reply until its forward timeout. Nobody sends here once a lease passed
// (a node trusts an owner's key for a lease after it saw it written), nor
// when no other node is live.
func (n *Node) internalQuiet(ctx context.Context, leaving time.Time) error {
	if n.placement == nil || len(n.internalSubs) == 0 || n.placement.Alone() {
		return nil
	}
	handed := time.Now()
	quiet := internalQuietFor * n.cfg.Placement.Tick
	until := leaving.Add(n.cfg.Placement.LeaseTTL)
	for {
		last := handed
		if t := time.Unix(0, n.internalLast.Load()); t.After(last) {
			last = t
		}
		wait := min(time.Until(last.Add(quiet)), time.Until(until))
		if wait <= 0 || n.placement.Alone() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node: waiting for the internal subscriptions to go quiet: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

// internalQuietFor is how many placement ticks the internal subscriptions
// of a leaving node must go without a message before it drains them.
const internalQuietFor = 2

// backgroundGrace is how long Shutdown waits for the background loops after
// cancelling them when the drain left less.
const backgroundGrace = 5 * time.Second

// waitBackground waits until the background loops return after bgCancel,
// or ctx ends (an error). Each returns at its next check of its context:
// the projector between two records, its transaction rolled back.
func (n *Node) waitBackground(ctx context.Context) error {
	done := make(chan struct{})
	go func() { n.bgWG.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node: background work still running at the drain timeout: %w", ctx.Err())
	}
}

// Run starts a node and serves until ctx ends, then shuts down gracefully
// within the drain timeout.
func Run(ctx context.Context, cfg Config, logger *slog.Logger, drain time.Duration) error {
	n, err := Start(ctx, cfg, logger)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped (SIGTERM) while waiting for the cluster: a clean exit.
			logger.Info("stopped before ready", "err", err)
			return nil
		}
		return err
	}
	<-ctx.Done()
	logger.Info("shutting down", "drain", drain)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		return fmt.Errorf("node: shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// watcher is a watch over the log (log, gated, with the log in one stream;
// else routed to each aggregate's partition), at most reads at once.
func (n *Node) watcher(log events.StreamReader, reads int) watcher {
	w := watcher{log: log, nc: n.nc, reads: make(chan struct{}, reads)}
	if n.plog != nil {
		w.route = watchRoute(n.plog, n.storage)
	}
	return w
}
