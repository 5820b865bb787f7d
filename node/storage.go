package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
)

// Reasons the log is unavailable (the reason label of
// agentmem_unavailable_total and of /healthz).
const (
	reasonOutOfSpace   = "out_of_space"       // the data dir's disk has less than MinFreeBytes free
	reasonJSDisabled   = "jetstream_disabled" // JetStream is off (the server turns it off on some faults)
	reasonWriteError   = "write_error"        // a stream latched a write error (a full disk, an I/O error)
	reasonStorageLimit = "storage_limit"      // JetStream's store limit (max_file_store, account) is reached
	reasonDeadline     = "deadline"           // a request not answered by the store timeout while the log was unavailable
	reasonNoQuorum     = "no_quorum"          // the replicated log stream has no leader, or its leader too few live peers
)

// The quorum probe of a replicated log (storageWatch.quorum): how long the
// stream's leader may take to answer, and how recently a replica must have
// been heard from to count as live (the leader hears from each every
// second, JetStream's raft heartbeat).
const (
	quorumProbeTimeout = time.Second
	replicaSeen        = 2500 * time.Millisecond
)

// Pauses between two restarts of the embedded JetStream that did not help.
const (
	minRestartPause = time.Second
	maxRestartPause = 30 * time.Second
)

// part is the health of one part of the node (/healthz): ok, or why not.
type part struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func fault(reason, detail string) part { return part{Reason: reason, Detail: detail} }

var healthy = part{OK: true}

// storageState is one observation of storageWatch; immutable once stored.
type storageState struct {
	Log       part
	JetStream part
	Projector part
	// Placement is the quorum of the placement bucket's stream (probed
	// with a replicated log while JetStream is on; healthy otherwise):
	// without it no lease can be written.
	Placement part
	// FreeBytes is the free space of the data dir's disk (-1: unknown).
	FreeBytes int64
	// Lost are, with the log in K > 1 partitions, the partitions whose
	// stream has no quorum while others have theirs (partition order):
	// the gate refuses their requests only. Empty while every partition
	// has its quorum and while none has (then Log says so, as for one
	// stream).
	Lost []partitionPart
}

// partitionPart is the health of one log partition's stream.
type partitionPart struct {
	Partition int    `json:"partition"`
	Stream    string `json:"stream"`
	part
}

// logOf is the health of log partition p (-1: the log as a whole): Log
// while the whole log is unavailable, else p's own.
func (st *storageState) logOf(p int) part {
	if !st.Log.OK || p < 0 {
		return st.Log
	}
	for _, lp := range st.Lost {
		if lp.Partition == p {
			return lp.part
		}
	}
	return healthy
}

// storageWatch watches what the node's writes depend on: the disk under the
// data dir, JetStream (the embedded server's own health, or the account's
// limits on an external one) and the projector. It decides whether the log
// is available, which the gate (gate.go) enforces and /healthz and
// /metrics show, and it recovers without a restart of the node: when the
// embedded JetStream is off or latched a write error and the disk has room
// again, it restarts JetStream (with backoff), and it wakes the projector.
//
// Only Run writes its fields except state, which readers load.
type storageWatch struct {
	embedded  *natsembed.Server // nil on an external NATS
	js        jetstream.JetStream
	dirs      []string // statfs'd for free space
	minFree   int64
	interval  time.Duration
	projector projector // nil without a projector
	// stream is the log stream; replicated: it has more than one replica,
	// and the watch probes its quorum. streams are, with the log in K > 1
	// partitions, the K partition streams, each probed (stream unused).
	stream     string
	streams    []string
	replicated bool
	// bucket is the placement bucket's stream, probed as the log's are
	// when replicated ("": not probed).
	bucket  string
	logger  *slog.Logger
	metrics *storageMetrics

	state atomic.Pointer[storageState]
	nudge chan struct{} // capacity 1: check now
	// down is cancelled when the log becomes unavailable, failing the
	// appends in flight at once (gate.go); replaced when it is back.
	down atomic.Pointer[context.Context]
	// cancelDown cancels *down; only Run uses it.
	cancelDown context.CancelFunc
	// partDown are down per log partition (K > 1): cancelled when the
	// partition's stream becomes unavailable alone; cancelPart cancel
	// them, only Run uses it.
	partDown   []atomic.Pointer[context.Context]
	cancelPart []context.CancelFunc

	// pending is what the projection has yet to take for the appends the
	// gate let through (gate.go).
	pending pendingWrites
	// inFlight is what the writes let through and not yet stored will
	// take (their reckoned size): a snapshot of megabytes being put is
	// not in the free space the next write's check reads (gate.go).
	inFlight atomic.Int64

	restartPause time.Duration
	lastRestart  time.Time
	// faultSince: when the server's health first showed a store error
	// that every observation since has seen (zero: none now).
	faultSince time.Time
	// partOf is the log partition of an appended subject (nil: the log is
	// one stream, partition 0).
	partOf func(subject string) int
	// revive runs the projector again if it stopped (nil without one);
	// used for reviveWindow after a JetStream restart.
	revive func()
}

// reviveWindow is how long after restarting JetStream the watch runs a
// stopped projector again: it may have read while the streams reloaded.
const reviveWindow = time.Minute

// projector is what the watch needs of projections.Projector.
type projector interface {
	Problem() string
	Wake()
	Reread()
	AppliedSeq() uint64
	// AppliedSeqOf is a log partition's checkpoint (partition 0's is the
	// one stream's).
	AppliedSeqOf(part int) uint64
}

func newStorageWatch(embedded *natsembed.Server, js jetstream.JetStream, dirs []string, minFree int64, interval time.Duration,
	p projector, logger *slog.Logger, m *storageMetrics) *storageWatch {
	w := &storageWatch{embedded: embedded, js: js, dirs: dirs, minFree: minFree, interval: interval, projector: p,
		logger: logger, metrics: m, nudge: make(chan struct{}, 1), restartPause: minRestartPause}
	w.state.Store(&storageState{Log: healthy, JetStream: healthy, Projector: healthy, Placement: healthy, FreeBytes: -1})
	ctx, cancel := context.WithCancel(context.Background())
	w.down.Store(&ctx)
	w.cancelDown = cancel
	return w
}

// Nudge asks Run to check at once (an append timed out). Never blocks.
func (w *storageWatch) Nudge() {
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

// State is the last observation.
func (w *storageWatch) State() *storageState { return w.state.Load() }

// Down returns a context cancelled as soon as the log becomes unavailable.
func (w *storageWatch) Down() context.Context { return *w.down.Load() }

// setPartitions has the watch probe the K streams of a log in K > 1
// partitions of stream, each alone. Called before Run.
func (w *storageWatch) setPartitions(stream string, k int) {
	w.streams = make([]string, k)
	w.partDown = make([]atomic.Pointer[context.Context], k)
	w.cancelPart = make([]context.CancelFunc, k)
	for i := range k {
		w.streams[i] = events.PartitionStream(stream, i, k)
		ctx, cancel := context.WithCancel(context.Background())
		w.partDown[i].Store(&ctx)
		w.cancelPart[i] = cancel
	}
	w.partOf = func(subject string) int { p, _ := events.SubjectPartition(subject, k); return p }
	w.metrics.partitions(k)
}

// partitionOfID is the log partition of the aggregate id (-1: the log is
// one stream).
func (w *storageWatch) partitionOfID(id string) int {
	if len(w.streams) < 2 {
		return -1
	}
	return events.LogPartition(id, len(w.streams))
}

// partitionOfSubject is the log partition of the logical subject (-1: the
// log is one stream).
func (w *storageWatch) partitionOfSubject(subject string) int {
	if len(w.streams) < 2 {
		return -1
	}
	return w.partOf(subject)
}

// DownOf returns a context cancelled as soon as log partition p becomes
// unavailable alone (nil: p is -1, the log is one stream); Down is
// cancelled when the whole log does.
func (w *storageWatch) DownOf(p int) context.Context {
	if p < 0 || p >= len(w.partDown) {
		return nil
	}
	return *w.partDown[p].Load()
}

// Run checks at once, then every interval (or when nudged), until ctx ends.
func (w *storageWatch) Run(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	defer w.cancelDown()
	defer func() {
		for _, cancel := range w.cancelPart {
			cancel()
		}
	}()
	for {
		w.step(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-w.nudge:
		}
	}
}

// step observes, recovers what it can, publishes the state.
func (w *storageWatch) step(ctx context.Context) {
	st := w.observe(ctx)
	if w.recover(st) {
		st = w.observe(ctx)
	}
	prev := w.state.Load()
	w.state.Store(st)
	w.metrics.set(st)
	w.report(prev, st)
}

// faultConfirm is how long a store error in the server's health must last
// before the watch takes it for a write error: a stream being created
// (the placement bucket, the object store at start) shows as "could not
// be recovered" until its metadata is written, and a write error taken
// from that refused every write at start (and restarting JetStream then
// lost the stream being created).
const faultConfirm = 100 * time.Millisecond

// faultLasted records that the server's health shows a store error at now
// and reports whether it has for faultConfirm (two observations at least
// that far apart).
func (w *storageWatch) faultLasted(now time.Time) bool {
	if w.faultSince.IsZero() {
		w.faultSince = now
		return false
	}
	return now.Sub(w.faultSince) >= faultConfirm
}

// observe reads the disk, JetStream and the projector.
func (w *storageWatch) observe(ctx context.Context) *storageState {
	st := &storageState{Log: healthy, JetStream: healthy, Projector: healthy, Placement: healthy, FreeBytes: w.freeBytes()}
	limit := healthy
	if e := w.embedded; e != nil {
		if !e.JetStreamEnabled() {
			st.JetStream = fault(reasonJSDisabled, "the embedded JetStream is off (the server turns it off on some storage faults; see its log)")
		} else if f := e.StoreFaults(); len(f) > 0 {
			if w.faultLasted(time.Now()) {
				st.JetStream = fault(reasonWriteError, strings.Join(f, "; "))
			}
		} else {
			w.faultSince = time.Time{}
			if used, max, on := e.StoreUsage(); on && max > 0 && used >= max {
				limit = fault(reasonStorageLimit, fmt.Sprintf("JetStream stores %d bytes, its limit (max_file_store) is %d", used, max))
			}
		}
	}
	if st.JetStream.OK && w.js != nil && w.replicated {
		var wg sync.WaitGroup
		if w.bucket != "" {
			// Beside the log's probe: each may wait quorumProbeTimeout.
			wg.Go(func() { st.Placement = w.placementQuorum(ctx) })
		}
		if len(w.streams) > 1 {
			st.JetStream, st.Lost = w.quorums(ctx)
		} else {
			st.JetStream = w.quorum(ctx, w.stream, "log stream")
		}
		wg.Wait()
	}
	if st.JetStream.OK && limit.OK && w.js != nil {
		if p := w.accountLimits(ctx); p.Reason == reasonJSDisabled {
			st.JetStream = p
		} else {
			limit = p
		}
	}
	switch {
	case !st.JetStream.OK:
		st.Log = st.JetStream
	case !limit.OK:
		st.Log = limit
	case w.embedded != nil && w.minFree >= 0 && !w.roomy(st.FreeBytes):
		// The embedded server's store is on this disk: refuse before a
		// write fails half-way. (An external server has its own disk.)
		st.Log = fault(reasonOutOfSpace, fmt.Sprintf("%d bytes free under %s, below the %d the node keeps free (--min-free-bytes)",
			st.FreeBytes, strings.Join(w.dirs, ", "), w.minFree))
	}
	if w.projector != nil {
		if p := w.projector.Problem(); p != "" {
			st.Projector = fault("projector", p)
		}
	}
	return st
}

// accountLimits asks the server about the account's JetStream: off, or at
// its storage limit. A request that fails otherwise says nothing (healthy).
func (w *storageWatch) accountLimits(ctx context.Context) part {
	cctx, cancel := context.WithTimeout(ctx, w.interval)
	defer cancel()
	ai, err := w.js.AccountInfo(cctx)
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fault(reasonJSDisabled, fmt.Sprintf("JetStream is off for the node's account: %v", err))
	case err != nil:
		return healthy
	case ai.Limits.MaxStore > 0 && int64(ai.Store) >= ai.Limits.MaxStore:
		return fault(reasonStorageLimit, fmt.Sprintf("the account stores %d bytes, its limit is %d", ai.Store, ai.Limits.MaxStore))
	}
	return healthy
}

// quorum asks the log stream's leader for the stream's state: no answer
// within quorumProbeTimeout (no leader: the quorum is lost, or the server
// cannot reach the cluster), an error, no leader named, or fewer live peers
// than a majority (a replica is live when it is online and was heard from
// within replicaSeen) make the log unavailable: an append would wait for an
// acknowledgement that does not come. A stream that does not exist is the
// log health check's to report (healthy here).
func (w *storageWatch) quorum(ctx context.Context, stream, what string) part {
	cctx, cancel := context.WithTimeout(ctx, quorumProbeTimeout)
	defer cancel()
	s, err := w.js.Stream(cctx, stream)
	switch {
	case ctx.Err() != nil, errors.Is(err, jetstream.ErrStreamNotFound):
		return healthy
	case errors.Is(err, context.DeadlineExceeded):
		return fault(reasonNoQuorum, fmt.Sprintf("the %s %s has no leader answering (no answer within %s): the JetStream quorum is lost or the server is cut off from its cluster", what, stream, quorumProbeTimeout))
	case err != nil:
		return fault(reasonNoQuorum, fmt.Sprintf("the %s %s cannot be reached: %v", what, stream, err))
	}
	ci := s.CachedInfo().Cluster
	if ci == nil || len(ci.Replicas) == 0 {
		return healthy // not replicated after all
	}
	if ci.Leader == "" {
		return fault(reasonNoQuorum, fmt.Sprintf("the %s %s has no leader", what, stream))
	}
	live, lost := 1, []string(nil)
	for _, r := range ci.Replicas {
		if !r.Offline && r.Active <= replicaSeen {
			live++
		} else {
			lost = append(lost, fmt.Sprintf("%s (offline %t, last seen %s ago)", r.Name, r.Offline, r.Active.Round(time.Millisecond)))
		}
	}
	if need := (1+len(ci.Replicas))/2 + 1; live < need {
		return fault(reasonNoQuorum, fmt.Sprintf("the %s %s has %d of %d peers live, a write needs %d; leader %s, lost %s",
			what, stream, live, 1+len(ci.Replicas), need, ci.Leader, strings.Join(lost, ", ")))
	}
	return healthy
}

// placementQuorum is quorum for the placement bucket's stream: without it
// no node can write a lease, so none can take a partition; each keeps
// serving those it held (placement.Hooks.BucketLost).
func (w *storageWatch) placementQuorum(ctx context.Context) part {
	p := w.quorum(ctx, w.bucket, "placement bucket's stream")
	if !p.OK {
		p.Detail += "; no node can take a partition (write a lease) until it is back; a node that reaches the log's quorum keeps serving those it held"
	}
	return p
}

// quorums is quorum for each of the K partition streams, asked at once:
// when none has its quorum, the JetStream part says so as for one stream
// (the whole log unavailable); when only some lack it, they are lost and
// the JetStream part is healthy.
func (w *storageWatch) quorums(ctx context.Context) (part, []partitionPart) {
	parts := make([]part, len(w.streams))
	var wg sync.WaitGroup
	for i, stream := range w.streams {
		wg.Go(func() { parts[i] = w.quorum(ctx, stream, "log stream") })
	}
	wg.Wait()
	var lost []partitionPart
	for i, p := range parts {
		if !p.OK {
			p.Detail = fmt.Sprintf("log partition %d (stream %s): %s", i, w.streams[i], p.Detail)
			lost = append(lost, partitionPart{Partition: i, Stream: w.streams[i], part: p})
		}
	}
	if len(lost) == len(w.streams) {
		return fault(reasonNoQuorum, fmt.Sprintf("none of the %d log partition streams has its quorum; %s", len(lost), parts[0].Detail)), nil
	}
	return healthy, lost
}

// roomy reports whether the disk has room: MinFreeBytes free and room for
// the smallest write above it (writeMargin, as refuseWrite reckons), or at
// least a byte when MinFreeBytes <= 0 (free unknown counts as room).
func (w *storageWatch) roomy(free int64) bool {
	if w.minFree > 0 {
		return free < 0 || free >= w.minFree+writeMargin
	}
	return free < 0 || free >= 1
}

// freeBytes is the least free space among the watched dirs (-1: unknown).
func (w *storageWatch) freeBytes() int64 {
	least := int64(-1)
	for _, d := range w.dirs {
		var fs syscall.Statfs_t
		if err := syscall.Statfs(d, &fs); err != nil {
			continue
		}
		free := int64(fs.Bavail) * int64(fs.Bsize)
		if least < 0 || free < least {
			least = free
		}
	}
	return least
}

// recover restarts the embedded JetStream when it is off or latched a
// write error and the disk has room again (at most once per restart pause,
// doubling while it does not help); it wakes a projector that reports a
// problem when the log is available and the disk has room. It reports
// whether it restarted.
func (w *storageWatch) recover(st *storageState) bool {
	if w.projector != nil && !st.Projector.OK && st.Log.OK && w.roomy(st.FreeBytes) {
		if w.revive != nil && st.Log.OK && !w.lastRestart.IsZero() && time.Since(w.lastRestart) < reviveWindow {
			w.revive() // a no-op while it runs
		}
		w.projector.Wake()
	}
	r := st.JetStream.Reason
	if w.embedded == nil || (r != reasonJSDisabled && r != reasonWriteError) || !w.roomy(st.FreeBytes) ||
		time.Since(w.lastRestart) < w.restartPause {
		return false
	}
	w.lastRestart = time.Now()
	w.logger.Warn("restarting the embedded JetStream", "reason", r, "observed", st.JetStream.Detail, "free_bytes", st.FreeBytes)
	w.metrics.restarts.Inc()
	began := time.Now()
	if err := w.embedded.RestartJetStream(); err != nil {
		w.restartPause = min(2*w.restartPause, maxRestartPause)
		w.logger.Error("cannot restart the embedded JetStream; trying again", "retry_in", w.restartPause, "err", err)
		return true
	}
	w.restartPause = minRestartPause
	w.logger.Info("embedded JetStream restarted", "took", time.Since(began).Round(time.Millisecond))
	if w.projector != nil {
		w.projector.Reread() // its consumer went with the old JetStream
		w.projector.Wake()
	}
	return true
}

// report logs each change of the log's or the projector's health and
// moves the down context.
func (w *storageWatch) report(prev, st *storageState) {
	switch {
	case prev.Log.OK && !st.Log.OK:
		w.cancelDown()
		w.logger.Error("log unavailable: writes answer 503 until it recovers", "reason", st.Log.Reason, "observed", st.Log.Detail, "free_bytes", st.FreeBytes)
	case !prev.Log.OK && st.Log.OK:
		ctx, cancel := context.WithCancel(context.Background())
		w.down.Store(&ctx)
		w.cancelDown = cancel
		w.logger.Info("log available again", "was", prev.Log.Reason, "free_bytes", st.FreeBytes)
		if w.projector != nil {
			w.projector.Wake()
		}
	case !st.Log.OK && st.Log.Reason != prev.Log.Reason:
		w.logger.Error("log still unavailable", "reason", st.Log.Reason, "observed", st.Log.Detail)
	}
	w.reportPartitions(prev, st)
	switch {
	case prev.Placement.OK && !st.Placement.OK:
		w.logger.Error("placement bucket unavailable: partitions stay where they are, unowned ones unserved, until it recovers",
			"reason", st.Placement.Reason, "observed", st.Placement.Detail)
	case !prev.Placement.OK && st.Placement.OK:
		w.logger.Info("placement bucket available again", "was", prev.Placement.Reason)
	}
	if prev.Projector.OK != st.Projector.OK {
		if st.Projector.OK {
			w.logger.Info("projector healthy again", "applied_seq", w.projector.AppliedSeq())
		} else {
			w.logger.Warn("projector unhealthy", "observed", st.Projector.Detail)
		}
	}
}

// reportPartitions logs each log partition that became unavailable alone
// (cancelling its down context) or available again (replacing it).
func (w *storageWatch) reportPartitions(prev, st *storageState) {
	if len(prev.Lost) == 0 && len(st.Lost) == 0 {
		return
	}
	was := make(map[int]bool, len(prev.Lost))
	for _, lp := range prev.Lost {
		was[lp.Partition] = true
	}
	is := make(map[int]bool, len(st.Lost))
	for _, lp := range st.Lost {
		is[lp.Partition] = true
		if !was[lp.Partition] {
			w.cancelPart[lp.Partition]()
			w.logger.Error("log partition unavailable: its writes answer 503 until it recovers", "partition", lp.Partition,
				"stream", lp.Stream, "reason", lp.Reason, "observed", lp.Detail)
		}
	}
	for _, lp := range prev.Lost {
		if is[lp.Partition] {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		w.partDown[lp.Partition].Store(&ctx)
		w.cancelPart[lp.Partition] = cancel
		if st.Log.OK {
			w.logger.Info("log partition available again", "partition", lp.Partition, "stream", lp.Stream, "was", lp.Reason)
			if w.projector != nil {
				w.projector.Wake()
			}
		}
	}
}

// storageMetrics are the watch's gauges and counters.
type storageMetrics struct {
	logAvailable       prometheus.Gauge
	placementAvailable prometheus.Gauge
	jetStreamEnabled   prometheus.Gauge
	projectorHealthy   prometheus.Gauge
	freeBytes          prometheus.Gauge
	restarts           prometheus.Counter
	unavailable        *prometheus.CounterVec
	// partitionAvailable is per log partition, K > 1 only (k of them).
	partitionAvailable *prometheus.GaugeVec
	k                  int
}

func newStorageMetrics(reg prometheus.Registerer, p interface{ WriteRetries() uint64 }) *storageMetrics {
	m := &storageMetrics{
		logAvailable: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentmem_log_available",
			Help: "1 while the log takes writes; 0 while writes answer 503 at once (out of space, JetStream off, a write error, a storage limit)."}),
		placementAvailable: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentmem_placement_available",
			Help: "1 while the placement bucket takes writes (leases); 0 while its stream has no quorum: no partition can change owner, each node serves those it held."}),
		jetStreamEnabled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentmem_jetstream_enabled",
			Help: "1 while JetStream is on; 0 while it is off (the embedded server turns it off on some storage faults; the node restarts it)."}),
		projectorHealthy: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentmem_projector_healthy",
			Help: "1 while the projector applies the log; 0 while it retries a failed write or stopped."}),
		freeBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentmem_disk_free_bytes",
			Help: "Free bytes of the data dir's disk (the least among the node's store dirs)."}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentmem_jetstream_restarts_total",
			Help: "Restarts of the embedded JetStream by the node, after a storage fault, once the disk had room."}),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentmem_unavailable_total",
			Help: "Requests answered 503 at once because the log was unavailable, by reason (deadline: not answered by the store timeout)."}, []string{"reason"}),
		partitionAvailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "agentmem_log_partition_available",
			Help: "With the log in K > 1 partitions, per partition: 1 while its stream takes writes; 0 while its writes answer 503 at once (the whole log unavailable, or its stream alone without quorum)."}, []string{"partition"}),
	}
	reg.MustRegister(m.logAvailable, m.placementAvailable, m.jetStreamEnabled, m.projectorHealthy, m.freeBytes, m.restarts, m.unavailable, m.partitionAvailable)
	if p != nil {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "agentmem_projector_write_retries_total",
			Help: "Batches whose write to the projection failed and were tried again."}, func() float64 { return float64(p.WriteRetries()) }))
	}
	m.set(&storageState{Log: healthy, JetStream: healthy, Projector: healthy, Placement: healthy, FreeBytes: -1})
	return m
}

// partitions has set report the k log partitions (K > 1), available until
// the watch says otherwise.
func (m *storageMetrics) partitions(k int) {
	m.k = k
	for i := range k {
		m.partitionAvailable.WithLabelValues(strconv.Itoa(i)).Set(1)
	}
}

func (m *storageMetrics) set(st *storageState) {
	m.logAvailable.Set(b2f(st.Log.OK))
	m.placementAvailable.Set(b2f(st.Placement.OK))
	for i := range m.k {
		m.partitionAvailable.WithLabelValues(strconv.Itoa(i)).Set(b2f(st.logOf(i).OK))
	}
	m.jetStreamEnabled.Set(b2f(st.JetStream.Reason != reasonJSDisabled))
	m.projectorHealthy.Set(b2f(st.Projector.OK))
	if st.FreeBytes >= 0 {
		m.freeBytes.Set(float64(st.FreeBytes))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
