package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/tenancy"
)

// errLogUnavailable is returned (wrapped, with the reason and what was
// observed) by the gated log's Append while the storage watch says the log
// is unavailable: nothing was sent, nothing stored. The actors answer it
// with 503.
var errLogUnavailable = errors.New("node: log unavailable")

// gatedLog is the log the actors write through: while the storage watch
// says the log is unavailable an append is refused at once (503) instead
// of waiting for a server that will not answer, and the appends in flight
// when it becomes unavailable are cancelled (their outcome is unknown, as
// for a timeout: a retry with the same command id is safe). Reads pass,
// except while JetStream is off.
type gatedLog struct {
	events.Log
	w *storageWatch
	// part is 1 + the partition of a log that is one partition's stream
	// (LedgerLog); 0: the partition of each appended subject.
	part int
}

var _ events.Log = gatedLog{}

// refuse returns the error for a request the log cannot serve now (nil:
// go on), and counts it: a write while the log is unavailable, a read
// (reads) only while JetStream is off or the log has no quorum (its reads
// go to the stream's leader, which there is none of).
func (w *storageWatch) refuse(reads bool) error {
	st := w.State()
	if st.Log.OK || (reads && st.Log.Reason != reasonJSDisabled && st.Log.Reason != reasonNoQuorum) {
		return nil
	}
	return w.logUnavailable(st, nil)
}

// refuseIn is refuse for a request of log partition p (-1: of the log as
// a whole, or the log is one stream): refused too while p's stream alone
// has no quorum, for reads as well (they go to its leader).
func (w *storageWatch) refuseIn(p int, reads bool) error {
	if err := w.refuse(reads); err != nil {
		return err
	}
	return w.refusePartition(p)
}

// refusePartition refuses (nil: go on) a request of log partition p while
// p's stream alone has no quorum (-1: never).
func (w *storageWatch) refusePartition(p int) error {
	if p < 0 {
		return nil
	}
	if lp := w.State().logOf(p); !lp.OK {
		return w.logUnavailable(&storageState{Log: lp}, nil)
	}
	return nil
}

// writeMargin is what a write is reckoned to take from the disk beyond
// its own bytes: the projection's pages it rewrites (copy on write) and
// its index, the file store's index. writeFactor: the log's bytes (once)
// and the projection's. The projection keeps what the log does and
// indexes it, and a commit copies the leaf it writes into (copy on write)
// before the old copy is freed: measured on tmpfs with 128 KiB messages
// (TestDiskFloorHeld), a commit took up to 2.5 times the message's size
// from the disk, 1.2 times once the freed pages were reused.
const (
	writeMargin = 64 << 10
	writeFactor = 4
)

// refuseWrite is refuseIn(p, false) for an append of size bytes to log
// partition p (-1: the log is one stream), and more: see refuseSpace. What
// the projection will take for the appends it has not applied yet counts
// as taken.
func (w *storageWatch) refuseWrite(p, size int) error {
	if err := w.refuseSpace(int64(writeFactor)*int64(size)+writeMargin, fmt.Sprintf("a write of %d bytes", size), true); err != nil {
		return err
	}
	return w.refusePartition(p)
}

// storing counts need bytes as taken (inFlight) until done is called: a
// write let through by refuseSpace, while it is being stored.
func (w *storageWatch) storing(need int64) (done func()) {
	w.inFlight.Add(need)
	return func() { w.inFlight.Add(-need) }
}

// refuseData is refuse(false) for size bytes stored in the object store
// (what: the request), and more: see refuseSpace. The projection does not
// keep the bytes (only the reference the log records).
func (w *storageWatch) refuseData(size uint64, what string) error {
	n := int64(min(size, 1<<62))
	return w.refuseSpace(n+writeMargin, fmt.Sprintf("%s of %d bytes", what, n), true)
}

// refuseSpace is refuse(false) for a write reckoned to take need bytes of
// the disk (what: the write, for the reason), and more: on the embedded
// server's disk it looks at the free space now (not at the last tick)
// and refuses the write if it would leave less than --min-free-bytes
// free, so that writes stop before the floor is crossed however fast they
// come; projected: what the projection has yet to take for the appends
// let through (pendingWrites) counts as taken too. It nudges the watch,
// which then refuses every write until space returns.
func (w *storageWatch) refuseSpace(need int64, what string, projected bool) error {
	if err := w.refuse(false); err != nil {
		return err
	}
	if w.embedded == nil || w.minFree < 0 || len(w.dirs) == 0 || w.farFromFloor() {
		return nil
	}
	free := w.freeBytes()
	var owed int64
	if projected {
		owed = w.owed()
	}
	busy := w.inFlight.Load()
	if free < 0 || free-owed-busy-need >= max(w.minFree, 1) {
		return nil
	}
	w.Nudge()
	detail := fmt.Sprintf("%d bytes free under %s: %s (reckoned at %d bytes of the disk) would leave less than the %d the node keeps free (--min-free-bytes)",
		free, strings.Join(w.dirs, ", "), what, need, w.minFree)
	if owed > 0 {
		detail += fmt.Sprintf(", with %d bytes reckoned for what the projection has yet to apply", owed)
	}
	if busy > 0 {
		detail += fmt.Sprintf(", and %d for the writes being stored", busy)
	}
	return w.logUnavailable(&storageState{Log: fault(reasonOutOfSpace, detail)}, nil)
}

// farHeadroom is how far above --min-free-bytes the last observation of
// the disk (at most a watch interval old) must be for a write to skip
// looking at the disk itself: no burst of one interval takes a GiB.
const farHeadroom = 1 << 30

// farFromFloor reports whether the watch last saw the disk more than
// farHeadroom above the floor: then a write neither reads the free space
// (a statfs per append) nor records what the projection owes for it.
func (w *storageWatch) farFromFloor() bool {
	st := w.State()
	return st != nil && st.FreeBytes >= 0 && st.FreeBytes-w.minFree > farHeadroom
}

// pendingWrites is what the projection has yet to take from the disk for
// the appends the gate let through: the projector applies an append some
// time after the log acknowledged it, and the gate must not let further
// writes take that space meanwhile.
type pendingWrites struct {
	mu    sync.Mutex
	q     []pendingWrite // guarded by mu
	bytes int64          // guarded by mu: the sum of q's bytes
}

type pendingWrite struct {
	part  int // the log partition (0 with the log in one stream)
	seq   uint64
	bytes int64
}

// add records an append at seq of log partition part reckoned to take
// bytes of the projection.
func (p *pendingWrites) add(part int, seq uint64, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.q = append(p.q, pendingWrite{part: part, seq: seq, bytes: bytes})
	p.bytes += bytes
}

// owed drops the appends at or below what their partition applied
// (applied(part)) and returns what the rest are reckoned to take.
func (p *pendingWrites) owed(applied func(part int) uint64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.q[:0]
	for _, pw := range p.q {
		if pw.seq > applied(pw.part) {
			kept = append(kept, pw)
		} else {
			p.bytes -= pw.bytes
		}
	}
	clear(p.q[len(kept):])
	p.q = kept
	return p.bytes
}

// owed is what the projection has yet to take for the appends let
// through (0 without a projector).
func (w *storageWatch) owed() int64 {
	if w.projector == nil {
		return 0
	}
	return w.pending.owed(w.projector.AppliedSeqOf)
}

// appended records an append to subject (in partition part; -1: the
// subject's) acknowledged at seq, of size bytes, that the projector has
// yet to apply.
func (w *storageWatch) appended(subject string, part int, seq uint64, size int) {
	if w.projector == nil || w.embedded == nil || w.minFree < 0 || w.farFromFloor() {
		return
	}
	switch {
	case part >= 0: // the partition is known (a removal's ledger record)
	case w.partOf != nil:
		part = w.partOf(subject)
	default:
		part = 0
	}
	if seq <= w.projector.AppliedSeqOf(part) {
		return
	}
	w.pending.add(part, seq, int64(writeFactor-1)*int64(size)+pendingPage)
}

// pendingPage is what an append not yet projected is reckoned to take of
// the projection beyond its bytes (a page of its indexes).
const pendingPage = 4 << 10

// gatedSnapshots is the snapshot store the actors write through: a
// snapshot is refused (the actor logs it and snapshots later; its log
// holds everything) while the log is unavailable, or when it would leave
// less than --min-free-bytes free, like an append: the snapshot bucket
// is on the same disk.
type gatedSnapshots struct {
	events.SnapshotStore
	w *storageWatch
}

func (g gatedSnapshots) Put(ctx context.Context, key string, data []byte) error {
	need := int64(len(data)) + writeMargin
	if err := g.w.refuseSpace(need, fmt.Sprintf("a snapshot of %d bytes", len(data)), true); err != nil {
		return err
	}
	defer g.w.storing(int64(len(data)))()
	return g.SnapshotStore.Put(ctx, key, data)
}

// logUnavailable counts a request refused or cut short while the log is
// unavailable (state st) and returns errLogUnavailable with the reason and
// what was observed, wrapping cause too when it is not nil.
func (w *storageWatch) logUnavailable(st *storageState, cause error) error {
	w.metrics.unavailable.WithLabelValues(st.Log.Reason).Inc()
	if cause != nil {
		return fmt.Errorf("%w (%s): %s: %w", errLogUnavailable, st.Log.Reason, st.Log.Detail, cause)
	}
	return fmt.Errorf("%w (%s): %s", errLogUnavailable, st.Log.Reason, st.Log.Detail)
}

// partition is the log partition of subject (-1: the log is one stream).
func (g gatedLog) partition(subject string) int {
	if g.part > 0 {
		return g.part - 1
	}
	return g.w.partitionOfSubject(subject)
}

func (g gatedLog) Append(ctx context.Context, subject string, expectedLastSeq uint64, msgID string, data []byte) (events.AppendResult, error) {
	p := g.partition(subject)
	if err := g.w.refuseWrite(p, len(data)); err != nil {
		return events.AppendResult{}, err
	}
	defer g.w.storing(int64(len(data)))()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(g.w.Down(), cancel)
	defer stop()
	partDown := g.w.DownOf(p)
	if partDown != nil {
		defer context.AfterFunc(partDown, cancel)()
	}
	res, err := g.Log.Append(ctx, subject, expectedLastSeq, msgID, data)
	if err == nil {
		g.w.appended(subject, p, res.Seq, len(data)) // p: the partition found above
	}
	if errors.Is(err, events.ErrUnknownOutcome) {
		g.w.Nudge() // no answer: look at the storage now, not at the next tick
		if g.w.Down().Err() != nil {
			return res, g.w.logUnavailable(g.w.State(), err)
		}
		if partDown != nil && partDown.Err() != nil {
			return res, g.w.logUnavailable(&storageState{Log: g.w.State().logOf(p)}, err)
		}
	}
	return res, err
}

func (g gatedLog) Load(ctx context.Context, subject string, afterSeq uint64, fn func(events.Record) error) (uint64, error) {
	if err := g.w.refuseIn(g.partition(subject), true); err != nil {
		return afterSeq, err
	}
	return g.Log.Load(ctx, subject, afterSeq, fn)
}

func (g gatedLog) LastSeq(ctx context.Context, subject string) (uint64, error) {
	if err := g.w.refuseIn(g.partition(subject), true); err != nil {
		return 0, err
	}
	return g.Log.LastSeq(ctx, subject)
}

// answerBy wraps the actors' dispatchers so that every request is answered
// while the log is unavailable: a request still unanswered after the store
// timeout gets 503 then (an append's outcome is unknown: retry with the
// same command id), and the actor's later answer is dropped. While the log
// is available nothing changes: slow requests keep their own timeouts.
type answerBy struct {
	d       *actors.Directory
	w       *storageWatch
	timeout time.Duration
}

var (
	_ api.Dispatcher      = answerBy{}
	_ api.ScopeDispatcher = answerBy{}
)

func (a answerBy) Dispatch(sessionID string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	p := a.w.partitionOfID(sessionID)
	if err := a.refuseWrite(body, p); err != nil {
		return err
	}
	r, done := a.guard(reply, !actors.IsRead(body), p)
	err := a.d.Dispatch(sessionID, who, body, r)
	if err != nil {
		done()
	}
	return err
}

func (a answerBy) DispatchScope(kind sharedmem.Kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	p := a.w.partitionOfID(id)
	if err := a.refuseWrite(body, p); err != nil {
		return err
	}
	r, done := a.guard(reply, !actors.IsRead(body), p)
	err := a.d.DispatchScope(kind, id, who, body, r)
	if err != nil {
		done()
	}
	return err
}

// refuseWrite answers a command that may write 503 at once while the log
// (or the aggregate's log partition p; -1: the log is one stream) is
// unavailable, before it reaches the actor: the actor would refuse it
// at its append anyway, then restart (its supervisor's backoff delays the
// requests queued behind). Reads go on to the actor.
func (a answerBy) refuseWrite(body any, p int) error {
	if actors.IsRead(body) {
		return nil
	}
	if err := a.w.refuseIn(p, false); err != nil {
		return fmt.Errorf("%w: %w; nothing was stored", actors.ErrUnavailable, err)
	}
	return nil
}

// guard returns reply answering at most once, and arms a timer that
// answers 503 if the log (or the aggregate's log partition p; -1: the log
// is one stream) is unavailable whenever the timeout passes unanswered; a
// write (write) is answered 503 as soon as the log or p becomes
// unavailable: it may wait behind an activation or another write that
// waits for the store. done stops both (the request was refused before it
// was queued, and is answered by the caller).
func (a answerBy) guard(reply actors.ReplyFunc, write bool, p int) (actors.ReplyFunc, func()) {
	g := &guarded{reply: reply, part: p}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.t = time.AfterFunc(a.timeout, func() { a.expire(g, false) })
	if write {
		g.down = context.AfterFunc(a.w.Down(), func() { a.expire(g, true) })
		if pd := a.w.DownOf(p); pd != nil {
			g.partDown = context.AfterFunc(pd, func() { a.expire(g, true) })
		}
	}
	return g.answer, g.done
}

// expire answers g with 503 if the log (or g's log partition) is
// unavailable, else (after the timeout; down: when it became unavailable,
// and is again already) waits another timeout.
func (a answerBy) expire(g *guarded, down bool) {
	g.mu.Lock()
	st := &storageState{Log: a.w.State().logOf(g.part)}
	if g.answered || st.Log.OK {
		if !g.answered && !down {
			g.t.Reset(a.timeout) // the log works: the actor answers in its own time
		}
		g.mu.Unlock()
		return
	}
	g.answered = true
	g.stopLocked()
	g.mu.Unlock()
	reason, what := reasonDeadline, fmt.Sprintf("not answered within the store timeout %s", a.timeout)
	if down {
		reason, what = st.Log.Reason, "not answered when the log became unavailable"
	}
	a.w.metrics.unavailable.WithLabelValues(reason).Inc()
	g.reply(nil, fmt.Errorf("%w: %s (%s: %s); a write's outcome is unknown, retry with the same command id",
		actors.ErrUnavailable, what, st.Log.Reason, st.Log.Detail))
}

// guarded is one request's reply, answered once.
type guarded struct {
	reply actors.ReplyFunc
	part  int // the aggregate's log partition (-1: the log is one stream)

	mu       sync.Mutex
	t        *time.Timer // guarded by mu
	down     func() bool // stops the AfterFunc on the down context (nil: none); guarded by mu
	partDown func() bool // stops the AfterFunc on the partition's down context (nil: none); guarded by mu
	answered bool        // guarded by mu
}

func (g *guarded) answer(m proto.Message, err error) {
	g.mu.Lock()
	first := !g.answered
	g.answered = true
	g.stopLocked()
	g.mu.Unlock()
	if first {
		g.reply(m, err)
	}
}

func (g *guarded) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.answered = true
	g.stopLocked()
}

// stopLocked stops the timer and the down watch. Caller holds mu.
func (g *guarded) stopLocked() {
	g.t.Stop()
	if g.down != nil {
		g.down()
	}
	if g.partDown != nil {
		g.partDown()
	}
}

// LedgerLog implements events.LedgerRouter: the gated log of the stream
// holding subject's removal ledger (the log itself in one stream).
func (g gatedLog) LedgerLog(subject string) (events.Log, error) {
	r, ok := g.Log.(events.LedgerRouter)
	if !ok {
		return g, nil
	}
	l, err := r.LedgerLog(subject)
	if err != nil {
		return nil, err
	}
	part := 0
	if g.w.partOf != nil {
		part = g.w.partOf(subject)
	}
	return gatedLog{Log: l, w: g.w, part: part + 1}, nil
}

// RemoveSubject implements events.Remover (erasure) when the log does.
func (g gatedLog) RemoveSubject(ctx context.Context, subject string, upTo uint64) error {
	r, ok := g.Log.(events.Remover)
	if !ok {
		return fmt.Errorf("events: %T cannot remove messages", g.Log)
	}
	return r.RemoveSubject(ctx, subject, upTo)
}

// gatedReader is the whole-stream reader the watch polls read through:
// refused at once (503) while the log is unavailable, as Load is.
type gatedReader struct {
	events.StreamReader
	w *storageWatch
	// part is 1 + the log partition of a partition's stream (0: the log
	// is one stream): refused too while that stream alone has no quorum.
	part int
}

func (g gatedReader) Bounds(ctx context.Context) (events.Bounds, error) {
	if err := g.w.refuseIn(g.part-1, true); err != nil {
		return events.Bounds{}, err
	}
	return g.StreamReader.Bounds(ctx)
}

func (g gatedReader) Read(ctx context.Context, from uint64, opts ...events.ReadOption) (events.Cursor, error) {
	if err := g.w.refuseIn(g.part-1, true); err != nil {
		return nil, err
	}
	return g.StreamReader.Read(ctx, from, opts...)
}

// SubjectCounts implements events.SubjectLister when the log does (the
// inspector's scopes directory), refused while the log is unavailable.
func (g gatedReader) SubjectCounts(ctx context.Context, filter string) (map[string]uint64, error) {
	if err := g.w.refuseIn(g.part-1, true); err != nil {
		return nil, err
	}
	l, ok := g.StreamReader.(events.SubjectLister)
	if !ok {
		return nil, fmt.Errorf("events: %T cannot list its subjects", g.StreamReader)
	}
	return l.SubjectCounts(ctx, filter)
}
