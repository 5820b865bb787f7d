package api

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api/subject"
	"github.com/agentmem/agentmem/api/wire"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Watcher reads an aggregate's changes for a watch long poll (the node,
// from the log).
type Watcher interface {
	// Watch returns up to maxChanges changes stored on subject after
	// fromSeq, waiting up to wait for a first one, and the sequence to poll
	// from next.
	Watch(ctx context.Context, subject string, fromSeq uint64, maxChanges int, wait time.Duration) ([]*memoryv1.WatchChange, uint64, error)
}

// Watch limits.
const (
	MaxWatchChanges     = 256
	DefaultWatchChanges = 64
	MaxWatchWait        = 30 * time.Second
)

// watchHandler serves one long poll: it holds one of the caller's watch
// slots (429 max_watches) and one of the node's until changes arrive, the
// wait ends or the requester is gone (when its transport can tell: Request.Gone). The
// caller's access to the aggregate is checked in the poll's goroutine
// when it needs the session's owner (authorized).
func (s *Service) watchHandler(c *call) {
	req := &memoryv1.WatchRequest{}
	if !s.readBody(c, req) {
		return
	}
	limit := int(req.GetMaxChanges())
	if limit == 0 {
		limit = DefaultWatchChanges
	}
	wait := time.Duration(req.GetWaitMs()) * time.Millisecond
	switch {
	case limit > MaxWatchChanges:
		c.fail(&Error{Code: 400, Field: "max_changes", Message: fmt.Sprintf("%d, at most %d", limit, MaxWatchChanges)})
		return
	case wait > MaxWatchWait:
		c.fail(&Error{Code: 400, Field: "wait_ms", Message: fmt.Sprintf("%d, at most %d", req.GetWaitMs(), MaxWatchWait.Milliseconds())})
		return
	}
	var logSubject string
	if c.subj.Family == subject.Session {
		id, err := c.subj.SessionID()
		if err != nil {
			c.fail(err)
			return
		}
		logSubject = events.SessionSubject(id)
	} else {
		t, err := c.scope()
		if err != nil {
			c.fail(err)
			return
		}
		logSubject = events.ScopeSubject(actors.AggregateKind(t.kind), t.id)
	}
	release, ok := hold(c, s.watchSlots, s.watches, "watches")
	if !ok {
		return
	}
	if !s.begin(c.rp, c.asJSON) {
		release()
		return
	}
	reply := s.answer(c.rp, c.asJSON)
	go func() {
		defer release()
		ctx, cancel := context.WithTimeout(s.ctx, wait+s.cfg.QueryTimeout)
		defer cancel()
		if err := s.authorized(ctx, c); err != nil {
			reply(nil, err)
			return
		}
		// The wait for a first change ends early when the service stops, or
		// when the requester is gone (an HTTP client that left): the poll
		// then holds no slot, subscription or goroutine for nobody.
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		stop := context.AfterFunc(s.watchCtx, wcancel)
		defer stop()
		gone := c.r.Gone
		if gone != nil {
			stopGone := context.AfterFunc(gone, wcancel)
			defer stopGone()
		}
		changes, last, err := s.watcher.Watch(wctx, logSubject, req.GetFromSeq(), limit, wait)
		if err != nil && ctx.Err() == nil && (s.watchCtx.Err() != nil || gone != nil && gone.Err() != nil) {
			changes, last, err = nil, req.GetFromSeq(), nil // stopping, or nobody waits: no change yet
		}
		if err != nil {
			reply(nil, &Error{Code: 503, Message: err.Error()})
			return
		}
		changes, last, err = wire.WatchPage(changes, last, c.asJSON || req.GetDecodeValues())
		if err != nil {
			reply(nil, &Error{Code: 500, Message: err.Error()})
			return
		}
		reply(&memoryv1.WatchReply{Changes: changes, LastSeq: last}, nil)
	}()
}
