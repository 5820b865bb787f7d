package api

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// Erase: mem.v1.session.<id>.erase, mem.v1.agent.<id>.erase,
// mem.v1.user.<id>.erase, mem.v1.scope.<kind>.<id>.erase, and an entry
// delete with erase set. An erase is checked like a write (the owner or an
// admin; scopes other than a user's or an agent's own need an admin), then
// handed to the Eraser (the erasure package's coordinator: the plan, each
// aggregate erased by its actor, the completion), which answers once the
// projection applied it: nothing erased is readable by any path then. The
// receipt names the removal and what went.

// EraseTimeout bounds one erase request (a user's may cover many sessions).
const EraseTimeout = 2 * time.Minute

// MaxEraseReasonBytes bounds EraseRequest.reason, which is kept in the log.
const MaxEraseReasonBytes = 256

// Eraser carries out an authorized erase (erasure.Coordinator).
type Eraser interface {
	Erase(ctx context.Context, req erasure.Request) (*memoryv1.EraseReceipt, error)
}

var _ Eraser = (*erasure.Coordinator)(nil)

// erase hands target to the Eraser as who asked it with req.
func (s *Service) erase(ctx context.Context, who *tenancy.Caller, target erasure.Target, req *memoryv1.EraseRequest) (*memoryv1.EraseReceipt, error) {
	if s.eraser == nil {
		return nil, &Error{Code: 501, Message: "this node keeps no removal ledger: erase is not served"}
	}
	return s.eraser.Erase(ctx, erasure.Request{Target: target, CommandID: req.GetCommandId(), By: who.Principal, Why: req.GetReason()})
}

// eraseBody reads and checks an EraseRequest.
func (s *Service) eraseBody(c *call) (*memoryv1.EraseRequest, bool) {
	req := &memoryv1.EraseRequest{}
	if !s.readBody(c, req) {
		return nil, false
	}
	if len(req.GetReason()) > MaxEraseReasonBytes {
		c.fail(&Error{Code: 400, Field: "reason", Message: fmt.Sprintf("%d bytes, the limit is %d", len(req.GetReason()), MaxEraseReasonBytes)})
		return nil, false
	}
	if id := req.GetCommandId(); id != "" {
		if err := events.ValidateID("command_id", id); err != nil {
			c.fail(err)
			return nil, false
		}
	}
	return req, true
}

// eraseSession serves mem.v1.session.<id>.erase: the session's user or
// agent (as a writer), or an admin.
func (s *Service) eraseSession(c *call) {
	id, err := c.subj.SessionID()
	if err != nil {
		c.fail(err)
		return
	}
	req, ok := s.eraseBody(c)
	if !ok {
		return
	}
	s.goQueryFor(c, EraseTimeout, func(ctx context.Context, reply actors.ReplyFunc) {
		if _, err := s.sessionInfo(ctx, id); err != nil {
			reply(nil, err) // 404 for a session that does not exist (or was erased)
			return
		}
		reply(s.erase(ctx, c.who, erasure.SessionTarget(id), req))
	})
}

// eraseScope serves mem.v1.scope.<kind>.<id>.erase and
// mem.v1.agent.<id>.erase: an admin; a user's own user:<id> and an agent's
// own agent:<id> (as writers); session:<id> follows its session.
func (s *Service) eraseScope(c *call) {
	t, err := c.scope()
	if err != nil {
		c.fail(err)
		return
	}
	req, ok := s.eraseBody(c)
	if !ok {
		return
	}
	s.goQueryFor(c, EraseTimeout, func(ctx context.Context, reply actors.ReplyFunc) {
		reply(s.erase(ctx, c.who, erasure.ScopeTarget(t.kind, t.id), req))
	})
}

// eraseUser serves mem.v1.user.<id>.erase: that user (as a writer) or an
// admin. It erases every session of the user (and their session scopes),
// the user:<id> scope, and the entries of other scopes that came from the
// user (erasure.Plan).
func (s *Service) eraseUser(c *call) {
	user, err := c.subj.UserID()
	if err != nil {
		c.fail(err)
		return
	}
	req, ok := s.eraseBody(c)
	if !ok {
		return
	}
	if s.rm == nil {
		c.fail(&Error{Code: 503, Message: "erasing a user needs the projection (its session list) on this node"})
		return
	}
	s.goQueryFor(c, EraseTimeout, func(ctx context.Context, reply actors.ReplyFunc) {
		reply(s.erase(ctx, c.who, erasure.UserTarget(user), req))
	})
}

// Metadata keys a copy carries (a published value, a fact or an episode
// consolidation extracted): the user and session it came from
// (erasure.SourceUserKey, erasure.SourceSessionKey). A session or user
// erase erases the copies.
const (
	SourceUserKey    = erasure.SourceUserKey
	SourceSessionKey = erasure.SourceSessionKey
)

// eraseEntry serves an entry delete with erase set: checked as the erase
// of its scope (mayEraseScope: an erase removes other writers' versions
// too), then the scope's actor rewrites the scope without the key.
func (s *Service) eraseEntry(c *call, t scopeTarget, d *memoryv1.DeleteEntryRequest) {
	if len(d.GetReason()) > MaxEraseReasonBytes {
		c.fail(&Error{Code: 400, Field: "reason", Message: fmt.Sprintf("%d bytes, the limit is %d", len(d.GetReason()), MaxEraseReasonBytes)})
		return
	}
	if err := sharedmem.ValidateKey(d.GetKey()); err != nil {
		c.fail(err)
		return
	}
	s.goQueryFor(c, EraseTimeout, func(ctx context.Context, reply actors.ReplyFunc) {
		// An erase removes every version, other writers' too: as for a
		// whole scope, shared scopes need an admin.
		if err := s.mayEraseScope(ctx, c.who, t); err != nil {
			reply(nil, err)
			return
		}
		reply(s.erase(ctx, c.who, erasure.EntryTarget(t.kind, t.id, d.GetKey()),
			&memoryv1.EraseRequest{CommandId: d.GetCommandId(), Reason: d.GetReason()}))
	})
}
