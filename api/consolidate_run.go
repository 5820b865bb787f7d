package api

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// background runs consolidations beside the actors: a queue of at most
// backgroundQueue jobs served by backgroundWorkers goroutines. A trigger
// that finds the queue full is refused (logged and counted in
// agentmem_consolidation_errors_total); the session's next trigger, an
// on-demand call, or (once terminated) the restart sweep consolidates it.
// Jobs still queued at Stop are dropped the same way.
type background struct {
	ctx    context.Context // cancelled by wait
	cancel context.CancelFunc
	queue  chan func()
	mu     sync.Mutex
	wg     sync.WaitGroup
	// started and stopped are guarded by mu.
	started, stopped bool
}

const (
	backgroundWorkers = 2
	backgroundQueue   = 1024
)

// init starts the workers.
func (b *background) init() {
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.queue = make(chan func(), backgroundQueue)
	b.started = true
	for range backgroundWorkers {
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

// start queues fn; false when the queue is full or the service stopped.
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

// consolidateAfter wraps the reply of a session command: after a stored
// TERMINATE (ConsolidateOnTerminate), or an append whose user turn is a
// multiple of ConsolidateEveryTurns, the session is consolidated in the
// background. The reply is not delayed.
func (s *Service) consolidateAfter(id string, body any, reply actors.ReplyFunc) actors.ReplyFunc {
	if s.scopes == nil || s.rm == nil {
		return reply
	}
	terminate := false
	every := false
	switch r := body.(type) {
	case *memoryv1.StatusRequest:
		terminate = s.cfg.ConsolidateOnTerminate && r.GetAction() == memoryv1.StatusAction_STATUS_ACTION_TERMINATE
	case *memoryv1.AppendRequest:
		every = s.cfg.ConsolidateEveryTurns > 0 && latestUserText(r) != ""
	}
	if !terminate && !every {
		return reply
	}
	return func(m proto.Message, err error) {
		reply(m, err)
		if err != nil {
			return
		}
		s.consolidateLater(id, every)
	}
}

// consolidateLater consolidates session id in the background; onTurn:
// only when its turn count is a multiple of ConsolidateEveryTurns.
func (s *Service) consolidateLater(id string, onTurn bool) {
	ok := s.background.start(func() {
		ctx, cancel := context.WithTimeout(s.background.ctx, consolidateTimeout)
		defer cancel()
		if onTurn {
			info, err := s.sessionInfo(ctx, id)
			if err != nil || info.GetTurn() == 0 || int(info.GetTurn())%s.cfg.ConsolidateEveryTurns != 0 {
				return
			}
		}
		if _, err := s.Consolidate(ctx, id, false); err != nil {
			s.metrics.ConsolidationErrors.Inc()
			s.logger.Warn("consolidation failed; the next trigger or the restart sweep retries it", "session", id, "err", err)
		}
	})
	if !ok {
		s.metrics.ConsolidationErrors.Inc()
		s.logger.Warn("consolidation not queued: the queue is full or the service stops; the next trigger or the restart sweep does it", "session", id)
	}
}

// ResumeWindow: the restart sweep looks at sessions terminated this
// recently (a crash interrupts a consolidation within minutes of the
// termination; older sessions are not read again at every start).
const ResumeWindow = 24 * time.Hour

// resumeWait bounds the sweep's wait for the projection at start.
const resumeWait = 10 * time.Minute

// ResumeConsolidation consolidates, in the background, every session of
// the read model terminated within ResumeWindow without a
// consolidated/<id> marker: the ones a crash interrupted (writes already
// made are found and not repeated). It returns once the sweep is started;
// Stop ends it. The sweep first waits (up to resumeWait) for the
// projection to apply the log up to logEnd (its end when the node
// started): a projection behind the log would not list the sessions
// terminated since its checkpoint.
func (s *Service) ResumeConsolidation(logEnd uint64) {
	if !s.cfg.ConsolidateOnTerminate || s.scopes == nil || s.rm == nil {
		return
	}
	s.background.start(func() {
		wctx, cancel := context.WithTimeout(s.background.ctx, resumeWait)
		err := s.rm.WaitFor(wctx, logEnd)
		cancel()
		if err != nil {
			s.metrics.ConsolidationErrors.Inc()
			s.logger.Warn("consolidation sweep: the projection did not reach the log's end; sweeping what it holds", "log_end", logEnd, "err", err)
		}
		token := ""
		for s.background.ctx.Err() == nil {
			list, next, err := s.rm.ListSessions(&memoryv1.ListSessionsRequest{Status: memoryv1.SessionStatus_SESSION_STATUS_TERMINATED, Limit: 100, PageToken: token})
			if err != nil {
				s.logger.Warn("consolidation sweep: listing sessions failed", "err", err)
				return
			}
			since := time.Now().Add(-ResumeWindow).UnixNano()
			for _, e := range list {
				if s.background.ctx.Err() != nil {
					return
				}
				if e.GetUpdatedUnixNano() < since {
					continue
				}
				s.resumeOne(e)
			}
			if token = next; token == "" {
				return
			}
		}
	})
}

func (s *Service) resumeOne(e *memoryv1.SessionIndexEntry) {
	t := firstOf(ptrIf(e.GetUserId() != "", scopeTarget{sharedmem.KindUser, e.GetUserId()}), ptrIf(e.GetAgentId() != "", scopeTarget{sharedmem.KindAgent, e.GetAgentId()}))
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.background.ctx, consolidateTimeout)
	defer cancel()
	done, err := s.consolidatedAt(ctx, *t, e.GetSessionId())
	if err != nil || done {
		return
	}
	if _, err := s.Consolidate(ctx, e.GetSessionId(), false); err != nil {
		s.metrics.ConsolidationErrors.Inc()
		s.logger.Warn("consolidation sweep failed", "session", e.GetSessionId(), "err", err)
	}
}

func ptrIf(ok bool, t scopeTarget) *scopeTarget {
	if !ok {
		return nil
	}
	return &t
}
