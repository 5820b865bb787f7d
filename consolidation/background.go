package consolidation

import (
	"context"
	"sync"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// background runs consolidations beside the actors: a bounded queue
// served by a fixed number of goroutines. A run that finds the queue full
// is refused (logged and counted); the session's next trigger, an
// on-demand call, or (once terminated) the restart sweep does it. Runs
// still queued at Close are dropped the same way.
type background struct {
	ctx    context.Context // cancelled by wait
	cancel context.CancelFunc
	queue  chan func()
	wg     sync.WaitGroup
	mu     sync.Mutex
	// started and stopped are guarded by mu.
	started, stopped bool
}

// init starts the workers.
func (b *background) init(workers, queue int) {
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.queue = make(chan func(), queue)
	b.started = true
	for range workers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for {
				select {
				case <-b.ctx.Done():
					return
				case fn := <-b.queue:
					if b.ctx.Err() != nil {
						return
					}
					fn()
				}
			}
		}()
	}
}

// start queues fn; false when the queue is full or the workers stopped.
func (b *background) start(fn func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started || b.stopped {
		return false
	}
	select {
	case b.queue <- fn:
		return true
	default:
		return false
	}
}

// wait refuses new work, cancels what runs and waits for the workers.
func (b *background) wait() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	if b.cancel != nil {
		b.cancel()
	}
	b.wg.Wait()
}

// Later consolidates session id in the background; onTurn: only when its
// turn count is a multiple of Config.EveryTurns. It reports whether the
// run was queued: false when the queue is full or the Consolidator is
// closed (the next trigger, an on-demand call or, once the session is
// terminated, the restart sweep does it). A queued run's end shows as the
// session's marker (Marker).
func (c *Consolidator) Later(id string, onTurn bool) bool {
	ok := c.bg.start(func() {
		ctx, cancel := context.WithTimeout(c.bg.ctx, c.cfg.Timeout)
		defer cancel()
		if onTurn {
			info, err := c.sessions.Info(ctx, id)
			if err != nil || info.GetTurn() == 0 || c.cfg.EveryTurns <= 0 || int(info.GetTurn())%c.cfg.EveryTurns != 0 {
				return
			}
		}
		if _, err := c.Consolidate(ctx, id, false); err != nil {
			c.failed()
			c.log.Warn("consolidation failed; the next trigger or the restart sweep retries it", "session", id, "err", err)
		}
	})
	if !ok {
		c.failed()
		c.log.Warn("consolidation not queued: the queue is full or the node stops; the next trigger or the restart sweep does it", "session", id)
	}
	return ok
}

// Resume consolidates, in the background, every terminated session of
// the read model updated within Config.ResumeWindow that has no marker:
// the ones a crash interrupted (writes already made are found and not
// repeated). It returns once the sweep is queued; Close ends it. The sweep
// first waits (up to Config.ResumeWait) for the read model to apply the
// log up to logEnd (its end when the node started): a read model behind
// the log would not list the sessions terminated since its checkpoint.
func (c *Consolidator) Resume(logEnd uint64) {
	if !c.cfg.OnTerminate {
		return
	}
	c.bg.start(func() {
		wctx, cancel := context.WithTimeout(c.bg.ctx, c.cfg.ResumeWait)
		err := c.sessions.WaitFor(wctx, logEnd)
		cancel()
		if err != nil {
			c.failed()
			c.log.Warn("consolidation sweep: the read model did not reach the log's end; sweeping what it holds", "log_end", logEnd, "err", err)
		}
		token := ""
		for c.bg.ctx.Err() == nil {
			list, next, err := c.sessions.Terminated(c.bg.ctx, token)
			if err != nil {
				c.log.Warn("consolidation sweep: listing sessions failed", "err", err)
				return
			}
			since := time.Now().Add(-c.cfg.ResumeWindow).UnixNano()
			for _, e := range list {
				if c.bg.ctx.Err() != nil {
					return
				}
				if e.GetUpdatedUnixNano() >= since {
					c.resumeOne(e)
				}
			}
			if token = next; token == "" {
				return
			}
		}
	})
}

func (c *Consolidator) resumeOne(e *memoryv1.SessionIndexEntry) {
	info := &memoryv1.SessionInfo{SessionId: e.GetSessionId(), UserId: e.GetUserId(), AgentId: e.GetAgentId()}
	ctx, cancel := context.WithTimeout(c.bg.ctx, c.cfg.Timeout)
	defer cancel()
	done, err := c.Consolidated(ctx, info)
	if err != nil || done {
		return
	}
	if _, ok := Target(info); !ok {
		return
	}
	if _, err := c.Consolidate(ctx, e.GetSessionId(), false); err != nil {
		c.failed()
		c.log.Warn("consolidation sweep failed", "session", e.GetSessionId(), "err", err)
	}
}
