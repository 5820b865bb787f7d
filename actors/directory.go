package actors

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/gopool"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// ReplyFunc receives the outcome of one request, exactly once.
type ReplyFunc func(reply proto.Message, err error)

// request is the envelope the directory sends to a session actor.
type request struct {
	// who is the verified caller (nil: the node itself). Its principal
	// scopes command ids and is recorded in the batch (actor_id); session
	// actors check its access to the session.
	who *tenancy.Caller
	// body is an API request message, a command built by the API layer
	// (Promote, CopyEntry) or snapshotReq.
	body  any
	reply ReplyFunc
}

// passivate asks an actor to snapshot and stop (sent by Close).
type passivate struct{ done *sync.WaitGroup }

// rewritten carries an LLM rewrite back into the actor that asked for it.
type rewritten struct {
	summaryID string
	text      string
}

// Directory finds or spawns the actor that owns a session id.
type Directory struct {
	cfg        Config
	deps       Deps
	system     *actor.ActorSystem
	root       *actor.RootContext
	recoveries chan struct{}
	// mailboxes runs the actors' mailboxes (see dispatcher).
	mailboxes *gopool.Pool

	// bg is cancelled on Close; background rewrites watch it, bgWG waits for
	// them and the snapshot puts. bgMu orders each start (goBackground)
	// with Close's wait: an actor that passivated still serves what was
	// queued before its poison pill, and may start a put while Close waits
	// (a WaitGroup's Add from zero concurrent with its Wait is a race).
	bg       context.Context
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup
	bgMu     sync.Mutex
	bgClosed bool // guarded by bgMu

	mu     sync.Mutex
	pids   map[string]*actor.PID // guarded by mu
	closed bool                  // guarded by mu
}

// New starts an actor system for the session actors.
func New(cfg Config, deps Deps) (*Directory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	logger := deps.Logger
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return logger.With("component", "protoactor")
	}))
	bg, cancel := context.WithCancel(context.Background())
	d := &Directory{
		cfg:        cfg,
		deps:       deps,
		system:     system,
		root:       system.Root.WithGuardian(actor.NewExponentialBackoffStrategy(time.Minute, cfg.RestartBackoff)),
		recoveries: make(chan struct{}, cfg.MaxConcurrentRecoveries),
		bg:         bg,
		bgCancel:   cancel,
		pids:       make(map[string]*actor.PID),
		mailboxes:  gopool.New(mailboxIdle),
	}
	return d, nil
}

// Dispatch sends body, from who (the verified caller; nil for the node's own
// requests), to the actor of sessionID, spawning it if needed. The actor
// checks who may reach the session. The reply function is called exactly
// once, from the actor's goroutine, unless Dispatch itself returns an error
// (then it is never called).
func (d *Directory) Dispatch(sessionID string, who *tenancy.Caller, body any, reply ReplyFunc) error {
	return d.dispatch(sessionKey(sessionID), func(key string) actor.Actor {
		return newSessionActor(d, key, sessionID)
	}, &request{who: who, body: body, reply: reply})
}

func sessionKey(id string) string { return "session/" + id }

// dispatch sends msg to the actor of key, spawning it with produce if needed.
func (d *Directory) dispatch(key string, produce func(key string) actor.Actor, msg any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	pid := d.pidLocked(key, produce)
	// Sent under mu: a passivating actor removes itself under mu before it
	// poisons itself, so this message is queued ahead of the poison pill.
	d.root.Send(pid, msg)
	return nil
}

// pidLocked finds or spawns the actor of key. Caller holds mu.
func (d *Directory) pidLocked(key string, produce func(key string) actor.Actor) *actor.PID {
	pid, ok := d.pids[key]
	if !ok {
		pid = d.root.Spawn(actor.PropsFromProducer(func() actor.Actor { return produce(key) },
			actor.WithDispatcher(dispatcher{d.mailboxes})))
		d.pids[key] = pid
		d.deps.Metrics.ActiveActors.Inc()
	}
	return pid
}

// Active returns the number of live session actors.
func (d *Directory) Active() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pids)
}

// release removes pid from the directory if it still owns key. It reports
// whether it did; the caller then poisons itself.
func (d *Directory) release(key string, pid *actor.PID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur, ok := d.pids[key]; ok && cur.Equal(pid) {
		delete(d.pids, key)
		d.deps.Metrics.ActiveActors.Dec()
		return true
	}
	return false
}

func (d *Directory) send(pid *actor.PID, msg any) { d.root.Send(pid, msg) }

// goBackground runs fn beside the actors, awaited by Close; once Close
// waits it runs nothing and reports false.
func (d *Directory) goBackground(fn func()) bool {
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	if d.bgClosed {
		return false
	}
	d.bgWG.Add(1)
	go func() {
		defer d.bgWG.Done()
		fn()
	}()
	return true
}

// acquireRecovery takes a recovery slot; release it with releaseRecovery.
func (d *Directory) acquireRecovery(ctx context.Context) error {
	select {
	case d.recoveries <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for a recovery slot: %v", ErrUnavailable, ctx.Err())
	}
}

func (d *Directory) releaseRecovery() { <-d.recoveries }

// Close stops accepting commands, lets every actor finish what it has
// queued, snapshot and stop, then stops background work and the actor
// system. It is idempotent; ctx bounds the wait.
func (d *Directory) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	wg := d.passivateLocked(func(string) bool { return true })
	d.mu.Unlock()
	err := awaitPassivated(ctx, wg, "close")
	d.bgCancel()
	d.bgMu.Lock()
	d.bgClosed = true
	d.bgMu.Unlock()
	d.bgWG.Wait()
	d.system.Shutdown()
	d.mailboxes.Stop()
	return err
}

// snapshotReq asks an actor for a deep copy of its state (tests, inspection).
type snapshotReq struct{}

// Snapshot returns a copy of the live state of session id (recovering it if
// needed). The session need not exist: then the snapshot is empty.
func (d *Directory) Snapshot(ctx context.Context, id string) (*memoryv1.SessionSnapshot, error) {
	type result struct {
		snap *memoryv1.SessionSnapshot
		err  error
	}
	ch := make(chan result, 1)
	err := d.dispatch(sessionKey(id), func(key string) actor.Actor { return newSessionActor(d, key, id) },
		&request{body: snapshotReq{}, reply: func(m proto.Message, err error) {
			s, _ := m.(*memoryv1.SessionSnapshot)
			ch <- result{s, err}
		}})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.snap, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// PassivateWhere passivates every live actor whose aggregate id matches
// (the node stops serving those ids: their partition moved to another
// node): each finishes what it has queued, snapshots and stops. It returns
// when they stopped or ctx ends.
func (d *Directory) PassivateWhere(ctx context.Context, match func(id string) bool) error {
	d.mu.Lock()
	wg := d.passivateLocked(match)
	d.mu.Unlock()
	return awaitPassivated(ctx, wg, "passivate")
}

// passivateLocked asks every live actor whose aggregate id matches to
// passivate; the WaitGroup is done when they all stopped. d.mu is held.
func (d *Directory) passivateLocked(match func(id string) bool) *sync.WaitGroup {
	var wg sync.WaitGroup
	for key, pid := range d.pids {
		if _, id, ok := strings.Cut(key, "/"); ok && match(id) {
			wg.Add(1)
			d.root.Send(pid, &passivate{done: &wg})
		}
	}
	return &wg
}

// awaitPassivated waits for wg or ctx; what names the operation in the
// error.
func awaitPassivated(ctx context.Context, wg *sync.WaitGroup, what string) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("actors: %s: %w", what, ctx.Err())
	}
}
