package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var deterministic = proto.MarshalOptions{Deterministic: true}

// model is what the pipeline needs of an aggregate's pure state
// (segmented.State for sessions, sharedmem.State for scopes).
type model interface {
	Exists() bool
	Version() uint64
	LastSeq() uint64
	LookupCommand(commandID string) (*memoryv1.CommandResult, bool)
	// CommandWindow is the stream sequence of the oldest command the model
	// still remembers, and whether it remembers every command the
	// aggregate ever stored.
	CommandWindow() (oldestSeq uint64, complete bool)
	// apply applies one stored batch; digest is its command's request
	// digest (nil: none recorded), kept beside commandID.
	apply(commandID string, digest []byte, version, seq uint64, timeUnixNano int64, evs []proto.Message) error
	marshal() ([]byte, error)
}

// modelKind builds the models of one aggregate kind.
type modelKind struct {
	// kind is the aggregate kind of the envelope and the snapshot key prefix.
	kind string
	// empty returns the state before the first event.
	empty func(id string) model
	// restore decodes a snapshot.
	restore func(data []byte) (model, error)
}

// core is the pipeline shared by every aggregate actor: recovery from the
// snapshot and the log tail, decide → append → apply, snapshots and
// passivation. Only its actor's Receive touches it.
type core struct {
	dir     *Directory
	mk      modelKind
	id      string
	key     string // directory key
	subject string
	self    *actor.PID

	// m is nil until recovered.
	m model
	// snapVersion is the version of the last snapshot written, in flight or loaded.
	snapVersion uint64
	// snapFlight is closed when the snapshot put in flight is done (nil: none).
	snapFlight chan struct{}
	// ring remembers the command keys applied since activation, beyond the
	// model's window (memory only; see commandRing).
	ring commandRing
	// writer is the principal of the request being served ("" outside
	// serve, for the node's own commands such as expiries and rewrites, and
	// on a node without tenants).
	writer string
	// body is the request being served (nil outside serve), digest its
	// CommandDigest, computed by mutate for a command whose id the caller
	// chose (nil otherwise: a generated id is never retried).
	digest []byte
	body   any
}

func newCore(d *Directory, mk modelKind, key, id string) core {
	return core{dir: d, mk: mk, id: id, key: key, subject: events.ScopeSubject(mk.kind, id)}
}

// common handles the lifecycle messages every aggregate actor shares. It
// reports whether msg was one of them.
func (c *core) common(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.self = ctx.Self()
		ctx.SetReceiveTimeout(c.dir.cfg.IdleTimeout)
	case *actor.ReceiveTimeout:
		c.passivate(ctx, nil)
	case *passivate:
		c.passivate(ctx, m.done)
	default:
		return false
	}
	return true
}

// serve answers one request with handle. A storage failure is answered
// (503) and then panics: what the actor holds may be behind the log or ahead
// of it, so the supervisor restarts it (with backoff) and it recovers from
// the log.
func (c *core) serve(m *request, handle func(any) (proto.Message, error)) {
	if m.who != nil {
		c.writer = m.who.Principal
	}
	c.body = m.body
	reply, err := handle(m.body)
	c.writer, c.digest, c.body = "", nil, nil
	m.reply(reply, err)
	if errors.Is(err, ErrUnavailable) {
		panic(err)
	}
}

// passivate snapshots, leaves the directory and poisons itself, so messages
// already queued are still handled first.
func (c *core) passivate(ctx actor.Context, done interface{ Done() }) {
	if done != nil {
		defer done.Done()
	}
	c.snapshot(true)
	if c.dir.release(c.key, ctx.Self()) {
		ctx.CancelReceiveTimeout()
		ctx.Poison(ctx.Self())
	}
}

func (c *core) snapshotKey() string { return c.mk.kind + "." + c.id }

// ensureRecovered loads the state on first use (and after a restart).
func (c *core) ensureRecovered() error {
	if c.m != nil {
		return nil
	}
	return c.reload()
}

// reload rebuilds the state from the latest snapshot and the log tail after
// it, up to the last sequence the stream leader reports.
//
// The log must still hold what the state was built from: the subject's last
// sequence is never below the snapshot's, nor below what this actor saw
// stored. If it is (the subject or the stream was purged, the stream deleted
// and recreated, an older log restored), every append would conflict
// forever: reload fails with ErrUnavailable (503) and logs an error instead.
func (c *core) reload() error {
	deps := c.dir.deps
	ctx, cancel := context.WithTimeout(context.Background(), c.dir.cfg.StoreTimeout)
	defer cancel()
	if err := c.dir.acquireRecovery(ctx); err != nil {
		return err
	}
	defer c.dir.releaseRecovery()
	start := time.Now()

	m := c.mk.empty(c.id)
	data, found, err := deps.Snapshots.Get(ctx, c.snapshotKey())
	if err != nil {
		deps.Metrics.StoreFailures.Inc()
		return fmt.Errorf("%w: load snapshot of %s %s: %v", ErrUnavailable, c.mk.kind, c.id, err)
	}
	if found {
		if restored, err := c.mk.restore(data); err != nil {
			// A snapshot is only a cache of the log: ignore a bad one loudly.
			deps.Logger.Warn("ignoring undecodable snapshot", "kind", c.mk.kind, "id", c.id, "err", err)
		} else {
			m = restored
		}
	}
	snapVersion, snapSeq := m.Version(), m.LastSeq()
	held := snapSeq // the least sequence the subject must still end at
	if c.m != nil {
		held = max(held, c.m.LastSeq())
	}
	var ring commandRing
	if _, err := deps.Log.Load(ctx, c.subject, snapSeq, func(rec events.Record) error {
		key, digest, err := replayRecord(deps.Codec, m, rec)
		ring.add(key, digest, m.Version(), rec.Seq)
		return err
	}); err != nil {
		deps.Metrics.StoreFailures.Inc()
		return fmt.Errorf("%w: load log of %s %s: %v", ErrUnavailable, c.mk.kind, c.id, err)
	}
	if err := c.checkHeld(ctx, m, snapSeq, held); err != nil {
		c.keepHeld(snapSeq)
		return err
	}
	c.m, c.snapVersion, c.ring = m, snapVersion, ring
	deps.Metrics.Recoveries.Inc()
	deps.Metrics.RecoveryLatency.Observe(time.Since(start).Seconds())
	return nil
}

// checkHeld fails when the log ends the subject before held, the sequence
// of the last batch the snapshot (snapSeq) or this actor had seen stored.
// m is the state just loaded: when the tail added nothing after the
// snapshot, the log is asked for the subject's last sequence.
func (c *core) checkHeld(ctx context.Context, m model, snapSeq, held uint64) error {
	logSeq := m.LastSeq()
	if logSeq == snapSeq && snapSeq > 0 {
		last, err := c.dir.deps.Log.LastSeq(ctx, c.subject)
		if err != nil {
			c.dir.deps.Metrics.StoreFailures.Inc()
			return fmt.Errorf("%w: last sequence of %s %s: %v", ErrUnavailable, c.mk.kind, c.id, err)
		}
		logSeq = last
	}
	if logSeq >= held {
		return nil
	}
	c.dir.deps.Metrics.StoreFailures.Inc()
	c.dir.deps.Logger.Error("the log no longer holds an aggregate's last sequence (purged?): refusing it until the log is restored or the aggregate's snapshot removed",
		"kind", c.mk.kind, "id", c.id, "subject", c.subject, "held_seq", held, "log_seq", logSeq)
	return fmt.Errorf("%w: %s %s: the log no longer holds its last sequence %d (it ends %s at %d; purged?)",
		ErrUnavailable, c.mk.kind, c.id, held, c.subject, logSeq)
}

// baseline reports whether a batch's events are one ScopeBaseline.
func baseline(evs []proto.Message) bool {
	if len(evs) != 1 {
		return false
	}
	_, ok := evs[0].(*memoryv1.ScopeBaseline)
	return ok
}

// keepHeld snapshots the live state when it is ahead of the snapshot
// (snapSeq) of an aggregate the log lost: the restarted actor, and any other
// node, then refuses the aggregate too, instead of recovering it as new
// from the emptied subject, until an operator restores the log or removes
// the snapshot.
func (c *core) keepHeld(snapSeq uint64) {
	if c.m == nil || !c.m.Exists() || c.m.LastSeq() <= snapSeq {
		return
	}
	if c.snapFlight != nil {
		<-c.snapFlight
		c.snapFlight = nil
	}
	data, err := c.m.marshal()
	if err == nil {
		err = c.putSnapshot(data)
	}
	c.snapshotDone(c.m.Version(), err)
}

// replayRecord applies one stored batch to m and returns its command key
// and request digest. Versions must follow each other: a gap or a repeat
// means the log and the state disagree. The one exception is a
// ScopeBaseline, which restates the whole state: the messages before it
// may be gone (an entry erase or a compaction purges them, and a crash
// between that purge and the snapshot stored after it leaves the subject
// starting with the baseline), so it may follow any earlier version.
func replayRecord(codec *events.Codec, m model, rec events.Record) (string, []byte, error) {
	batch, err := events.DecodeBatch(rec.Data)
	if err != nil {
		return "", nil, fmt.Errorf("seq %d: %w", rec.Seq, err)
	}
	evs, err := codec.Unpack(batch)
	if err != nil {
		return "", nil, fmt.Errorf("seq %d: %w", rec.Seq, err)
	}
	want := m.Version() + 1
	if baseline(evs) {
		want = max(want, batch.GetVersion())
	}
	if batch.GetVersion() != want {
		return "", nil, fmt.Errorf("seq %d: batch version %d, want %d", rec.Seq, batch.GetVersion(), want)
	}
	key, digest := events.CommandKey(batch.GetActorId(), batch.GetCommandId()), batch.GetCommandDigest()
	if err := m.apply(key, digest, batch.GetVersion(), rec.Seq, batch.GetTimeUnixNano(), evs); err != nil {
		return "", nil, fmt.Errorf("seq %d: apply: %w", rec.Seq, err)
	}
	return key, digest, nil
}

// mutate runs decide → append → apply for one command of the current
// writer. A command stored before (at any age: the model's window, then the
// command index) answers with its original result (duplicate) and appends
// nothing. decide reads the current state (it may be replaced by a reload
// between two attempts) and returns the events to store.
func (c *core) mutate(commandID string, decide func() ([]proto.Message, error)) (*memoryv1.MutationReply, error) {
	if commandID == "" {
		// No retry can name a generated id: no digest to compare it with.
		commandID = uuid.NewString()
	} else if err := events.ValidateID("command_id", commandID); err != nil {
		return nil, err
	} else {
		c.digest = CommandDigest(c.body)
	}
	key := events.CommandKey(c.writer, commandID)
	for attempt := 0; ; attempt++ {
		if r, ok, err := c.lookupCommand(key); err != nil {
			return nil, err
		} else if ok {
			return c.duplicate(commandID, r)
		}
		evs, err := decide()
		if err != nil {
			var rej interface{ Status() (int, string, string) }
			if errors.As(err, &rej) {
				code, _, _ := rej.Status()
				c.dir.deps.Metrics.Rejections.WithLabelValues(fmt.Sprint(code)).Inc()
			}
			return nil, err
		}
		if len(evs) == 0 {
			return &memoryv1.MutationReply{Version: c.m.Version(), Seq: c.m.LastSeq()}, nil
		}
		now := c.dir.deps.Now().UnixNano()
		res, err := c.store(commandID, now, evs)
		switch {
		case err == nil && !res.Duplicate:
			if err := c.m.apply(key, c.digest, c.m.Version()+1, res.Seq, now, evs); err != nil {
				// Stored but not applicable: our state is not to be trusted;
				// restart and recover from the log.
				return nil, fmt.Errorf("%w: apply stored batch %d: %v", ErrUnavailable, res.Seq, err)
			}
			c.ring.add(key, c.digest, c.m.Version(), res.Seq)
			c.snapshot(false)
			return &memoryv1.MutationReply{Version: c.m.Version(), Seq: res.Seq}, nil
		case err == nil && res.Duplicate, errors.Is(err, events.ErrConflict):
			// Someone (another node, or our own earlier attempt whose ack was
			// lost) moved the aggregate: reload and look the command up, then
			// decide once more.
			c.dir.deps.Metrics.Conflicts.Inc()
			if err := c.reload(); err != nil {
				return nil, err
			}
			if r, ok, err := c.lookupCommand(key); err != nil {
				return nil, err
			} else if ok {
				return c.duplicate(commandID, r)
			}
			if res.Duplicate {
				// The log holds this message id but the aggregate does not
				// show it: the outcome cannot be told, never "retry".
				return nil, fmt.Errorf("%w: the log reports command %q stored at seq %d, the %s does not show it yet", ErrUnavailable, commandID, res.Seq, c.mk.kind)
			}
			if attempt > 0 {
				return nil, &segmented.Rejection{Code: 409, Field: "id",
					Reason: c.mk.kind + " was changed concurrently by another writer; this command was not stored"}
			}
		default:
			c.dir.deps.Metrics.StoreFailures.Inc()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
}

// store appends one batch stamped now, fenced by the aggregate's last sequence.
func (c *core) store(commandID string, now int64, evs []proto.Message) (events.AppendResult, error) {
	deps := c.dir.deps
	packed, err := deps.Codec.Pack(evs)
	if err != nil {
		return events.AppendResult{}, err
	}
	data, err := events.EncodeBatch(&memoryv1.EventBatch{
		CommandId:     commandID,
		ActorId:       c.writer,
		AggregateKind: c.mk.kind,
		AggregateId:   c.id,
		Version:       c.m.Version() + 1,
		TimeUnixNano:  now,
		SchemaVersion: events.SchemaVersion,
		Events:        packed,
		CommandDigest: c.digest,
	})
	if err != nil {
		return events.AppendResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.dir.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	// Nats-Msg-Id deduplicates stream-wide: scope the command id to the
	// aggregate and the writer so neither two aggregates nor two writers
	// collide on the same command id.
	msgID := c.mk.kind + "." + c.id + "." + commandID
	if c.writer != "" {
		msgID = c.mk.kind + "." + c.id + "." + c.writer + "." + commandID
	}
	res, err := deps.Log.Append(ctx, c.subject, c.m.LastSeq(), msgID, data)
	deps.Metrics.AppendLatency.Observe(time.Since(start).Seconds())
	return res, err
}

// snapshot writes the state if enough batches passed since the last one (or
// any did, when force is set). The state is marshalled here, in Receive; the
// put runs beside the actor, one at a time, so a command never waits on it.
// A forced snapshot (passivation) waits for the put in flight and writes
// synchronously. A failed snapshot loses nothing: the log has every event;
// it is logged and counted.
func (c *core) snapshot(force bool) {
	if c.m == nil || !c.m.Exists() {
		return
	}
	v := c.m.Version()
	if c.snapFlight != nil {
		select {
		case <-c.snapFlight: // done: the next snapshot may go
		default:
			if !force {
				return // the next command tries again
			}
			<-c.snapFlight
		}
		c.snapFlight = nil
	}
	if v <= c.snapVersion || (!force && v-c.snapVersion < c.dir.cfg.SnapshotEvery) {
		return
	}
	data, err := c.m.marshal()
	if err != nil {
		c.snapshotDone(v, err)
		return
	}
	if force || c.self == nil {
		c.snapshotDone(v, c.putSnapshot(data))
		return
	}
	done := make(chan struct{})
	d, key := c.dir, c.snapshotKey()
	started := d.goBackground(func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), d.cfg.StoreTimeout)
		defer cancel()
		if err := d.deps.Snapshots.Put(ctx, key, data); err != nil {
			d.deps.Metrics.SnapshotErrors.Inc()
			d.deps.Logger.Warn("snapshot failed", "key", key, "version", v, "err", err)
			return
		}
		d.deps.Metrics.Snapshots.Inc()
	})
	if !started { // the directory is closing: written here
		c.snapshotDone(v, c.putSnapshot(data))
		return
	}
	// snapVersion moves now: the put in flight is the snapshot of v.
	c.snapVersion = v
	c.snapFlight = done
}

func (c *core) putSnapshot(data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.dir.cfg.StoreTimeout)
	defer cancel()
	return c.dir.deps.Snapshots.Put(ctx, c.snapshotKey(), data)
}

// snapshotDone records the outcome of a synchronous snapshot of version v.
func (c *core) snapshotDone(v uint64, err error) {
	deps := c.dir.deps
	if err != nil {
		deps.Metrics.SnapshotErrors.Inc()
		deps.Logger.Warn("snapshot failed", "kind", c.mk.kind, "id", c.id, "version", v, "err", err)
		return
	}
	c.snapVersion = v
	deps.Metrics.Snapshots.Inc()
}
