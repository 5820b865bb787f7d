package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// Erase (DESIGN §12): mem.v1.session.<id>.erase, mem.v1.agent.<id>.erase,
// mem.v1.user.<id>.erase and mem.v1.scope.<kind>.<id>.erase. An erase is
// checked like a write (the owner or an admin; scopes other than a user's
// or an agent's own need an admin), then each aggregate it covers is
// erased by its actor (actors.EraseAggregate: a content-free LogRemoval,
// its messages purged, its snapshot deleted), and the reply comes once the
// projection applied the last removal: nothing erased is readable by any
// path then. The receipt names the removal and what went.

// EraseTimeout bounds one erase request (a user's may cover many sessions).
const EraseTimeout = 2 * time.Minute

// MaxEraseReasonBytes bounds EraseRequest.reason, which is kept in the log.
const MaxEraseReasonBytes = 256

// physicalNote is the receipt's word on the bytes on disk.
const physicalNote = "the log's messages, snapshots and read-model rows are deleted now; " +
	"their bytes leave the files under the data dir at the next `agentmem-replay compact`"

// removalID is the id of the removal of target asked by who with
// commandID: the same request retried names the same removal (and so
// resumes or answers it); without a command id every request is new.
func removalID(target string, who *tenancy.Caller, commandID string) string {
	if commandID == "" {
		return "e" + strings.ReplaceAll(uuid.NewString(), "-", "")
	}
	h := sha256.Sum256([]byte(target + "\x00" + who.Principal + "\x00" + commandID))
	return "e" + hex.EncodeToString(h[:16])
}

// eraseRun collects the receipts of one erase request.
type eraseRun struct {
	s       *Service
	ctx     context.Context
	id      string // the request's removal id; each aggregate's is id + suffix
	target  string
	by, why string
	reason  memoryv1.RemovalReason
	out     *memoryv1.EraseReceipt
}

func (s *Service) newEraseRun(ctx context.Context, c *call, target string, req *memoryv1.EraseRequest) *eraseRun {
	return &eraseRun{
		s: s, ctx: ctx, id: removalID(target, c.who, req.GetCommandId()), target: target,
		by: c.who.Principal, why: req.GetReason(), reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE,
		out: &memoryv1.EraseReceipt{Target: target, Physical: physicalNote},
	}
}

// aggregate erases one aggregate by its actor; suffix tells it apart from
// the request's other aggregates.
func (e *eraseRun) aggregate(suffix string, dispatch func(body *memoryv1.EraseAggregate, reply actors.ReplyFunc) error) error {
	body := &memoryv1.EraseAggregate{RemovalId: e.id + "-" + shortHash(suffix), Reason: e.reason, Target: e.target, RequestedBy: e.by, Why: e.why}
	m, err := e.s.call(e.ctx, func(reply actors.ReplyFunc) error { return dispatch(body, reply) })
	if err != nil {
		return err
	}
	r, ok := m.(*memoryv1.EraseReceipt)
	if !ok {
		return fmt.Errorf("api: erase of %s answered %T", suffix, m)
	}
	e.out.Messages += r.GetMessages()
	e.out.RemovalSeq = max(e.out.RemovalSeq, r.GetRemovalSeq())
	return nil
}

// session erases session id and its session:<id> scope.
func (e *eraseRun) session(id string) error {
	if err := e.aggregate("s-"+id, func(b *memoryv1.EraseAggregate, r actors.ReplyFunc) error {
		return e.s.d.Dispatch(id, nil, b, r)
	}); err != nil {
		return err
	}
	if e.s.scopes != nil {
		if err := e.aggregate("c-"+id, func(b *memoryv1.EraseAggregate, r actors.ReplyFunc) error {
			return e.s.scopes.DispatchScope(sharedmem.KindSession, id, nil, b, r)
		}); err != nil {
			return err
		}
	}
	e.out.Sessions = append(e.out.Sessions, id)
	return nil
}

// scope erases scope kind:id.
func (e *eraseRun) scope(kind sharedmem.Kind, id string) error {
	if e.s.scopes == nil {
		return &Error{Code: 501, Message: "this node serves no scopes"}
	}
	if err := e.aggregate(string(kind)+"-"+id, func(b *memoryv1.EraseAggregate, r actors.ReplyFunc) error {
		return e.s.scopes.DispatchScope(kind, id, nil, b, r)
	}); err != nil {
		return err
	}
	e.out.Scopes = append(e.out.Scopes, string(kind)+":"+id)
	return nil
}

// finish waits until the projection applied every removal and returns the
// receipt.
func (e *eraseRun) finish() (*memoryv1.EraseReceipt, error) {
	if e.s.rm != nil && e.out.RemovalSeq > 0 {
		if err := e.s.rm.WaitFor(e.ctx, e.out.RemovalSeq); err != nil {
			return nil, &Error{Code: 503, Message: fmt.Sprintf("erased from the log, but the read model has not applied it yet (retry with the same command_id): %v", err)}
		}
	}
	e.out.RemovalId = e.id
	e.out.ErasedUnixNano = time.Now().UnixNano()
	return e.out, nil
}

// eraseBody reads and checks an EraseRequest.
func (s *Service) eraseBody(c *call) (*memoryv1.EraseRequest, bool) {
	req := &memoryv1.EraseRequest{}
	if !s.readBody(c.r, c.rp, c.asJSON, req) {
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
	id, err := sessionID(c.r.Subject())
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
		if err := s.checkSession(ctx, c.who, id, true); err != nil {
			reply(nil, err)
			return
		}
		e := s.newEraseRun(ctx, c, "session:"+id, req)
		if err := e.session(id); err != nil {
			reply(nil, err)
			return
		}
		reply(e.finish())
	})
}

// eraseScope serves mem.v1.scope.<kind>.<id>.erase and
// mem.v1.agent.<id>.erase: an admin; a user's own user:<id> and an agent's
// own agent:<id> (as writers); session:<id> follows its session.
func (s *Service) eraseScope(c *call) {
	t, err := parseScopeSubject(c.r.Subject())
	if err != nil {
		c.fail(err)
		return
	}
	req, ok := s.eraseBody(c)
	if !ok {
		return
	}
	s.goQueryFor(c, EraseTimeout, func(ctx context.Context, reply actors.ReplyFunc) {
		if err := s.mayEraseScope(ctx, c.who, t); err != nil {
			reply(nil, err)
			return
		}
		e := s.newEraseRun(ctx, c, string(t.kind)+":"+t.id, req)
		if err := e.scope(t.kind, t.id); err != nil {
			reply(nil, err)
			return
		}
		reply(e.finish())
	})
}

// mayEraseScope checks that who may erase scope t.
func (s *Service) mayEraseScope(ctx context.Context, who *tenancy.Caller, t scopeTarget) error {
	var err error
	switch {
	case who.Admin():
		return nil
	case t.kind == sharedmem.KindSession:
		return s.checkSession(ctx, who, t.id, true)
	case t.kind == sharedmem.KindUser:
		err = who.Scope(string(t.kind), t.id, true)
	case t.kind == sharedmem.KindAgent:
		err = who.Configure(string(t.kind), t.id)
	default:
		err = &tenancy.DeniedError{Field: "scope", Reason: fmt.Sprintf("erasing %s:%s needs the admin role", t.kind, t.id)}
	}
	if err != nil {
		s.metrics.Denied.WithLabelValues("erase").Inc()
	}
	return err
}

// eraseUser serves mem.v1.user.<id>.erase: that user (as a writer) or an
// admin. It erases every session of the user (and their session scopes),
// the user:<id> scope, and the entries of other scopes that the user's
// sessions published there (sourceUserKey).
func (s *Service) eraseUser(c *call) {
	user, err := userID(c.r.Subject())
	if err != nil {
		c.fail(err)
		return
	}
	req, ok := s.eraseBody(c)
	if !ok {
		return
	}
	if err := c.who.Scope(string(sharedmem.KindUser), user, true); err != nil {
		s.metrics.Denied.WithLabelValues("erase").Inc()
		c.fail(err)
		return
	}
	if s.rm == nil {
		c.fail(&Error{Code: 503, Message: "erasing a user needs the projection (its session list) on this node"})
		return
	}
	s.goQueryFor(c, EraseTimeout, func(ctx context.Context, reply actors.ReplyFunc) {
		e := s.newEraseRun(ctx, c, "user:"+user, req)
		if err := s.eraseUserRun(e, user); err != nil {
			reply(nil, err)
			return
		}
		reply(e.finish())
	})
}

func (s *Service) eraseUserRun(e *eraseRun, user string) error {
	// Every session of the user, as the projection lists them once it
	// applied what was stored before the request.
	if err := s.rm.WaitFor(e.ctx, s.rm.AppliedSeq()); err != nil {
		return err
	}
	for {
		list, _, err := s.rm.ListSessions(&memoryv1.ListSessionsRequest{UserId: user, Limit: 100})
		if err != nil {
			return err
		}
		if len(list) == 0 {
			break
		}
		for _, si := range list {
			if err := e.session(si.GetSessionId()); err != nil {
				return err
			}
		}
		// The projection has applied the removals of this page before the
		// next is listed (else the same sessions would come again).
		if err := s.rm.WaitFor(e.ctx, e.out.RemovalSeq); err != nil {
			return err
		}
	}
	if s.scopes == nil {
		return nil
	}
	if err := e.scope(sharedmem.KindUser, user); err != nil {
		return err
	}
	if s.entries == nil {
		return nil
	}
	// The values the user's sessions published into other scopes.
	copies, err := s.entries.EntriesWithMetadata(SourceUserKey, user)
	if err != nil {
		return err
	}
	for _, ref := range copies {
		if ref.Kind == sharedmem.KindUser && ref.ID == user {
			continue // erased whole above
		}
		if err := e.entry(ref.Kind, ref.ID, ref.Key); err != nil && !isNotFound(err) {
			return err
		}
	}
	return nil
}

// userID extracts and validates <id> of mem.v1.user.<id>.<op>.
func userID(subject string) (string, error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 {
		return "", &Error{Code: 400, Field: "user_id", Message: "subject is not mem.v1.user.<id>.<op>"}
	}
	if err := events.ValidateID("user_id", parts[3]); err != nil {
		return "", err
	}
	return parts[3], nil
}

// addEraseEndpoints registers the erase endpoints.
func (s *Service) addEraseEndpoints(add func(name, subject string, h func(*call)) error) error {
	if err := add("session_erase", "mem.v1.session.*.erase", s.eraseSession); err != nil {
		return err
	}
	if err := add("user_erase", "mem.v1.user.*.erase", s.eraseUser); err != nil {
		return err
	}
	if s.scopes == nil {
		return nil
	}
	if err := add("agent_erase", "mem.v1.agent.*.erase", s.eraseScope); err != nil {
		return err
	}
	return add("scope_erase", "mem.v1.scope.*.*.erase", s.eraseScope)
}

// Metadata keys a published copy carries (publish): the user and session
// it came from. A user erase erases the copies of its user's values.
const (
	SourceUserKey    = "agentmem.source_user"
	SourceSessionKey = "agentmem.source_session"
)

// eraseEntry serves an entry delete with erase set: checked as the delete
// (a write of the scope), then the scope's actor rewrites the scope
// without the key.
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
		if err := s.checkScope(ctx, c.who, t, true); err != nil {
			reply(nil, err)
			return
		}
		target := "entry:" + string(t.kind) + ":" + t.id + ":" + d.GetKey()
		e := s.newEraseRun(ctx, c, target, &memoryv1.EraseRequest{CommandId: d.GetCommandId(), Reason: d.GetReason()})
		if err := e.entry(t.kind, t.id, d.GetKey()); err != nil {
			reply(nil, err)
			return
		}
		reply(e.finish())
	})
}

// entry erases key of scope kind:id.
func (e *eraseRun) entry(kind sharedmem.Kind, id, key string) error {
	if e.s.scopes == nil {
		return &Error{Code: 501, Message: "this node serves no scopes"}
	}
	suffix := "entry\x00" + string(kind) + "\x00" + id + "\x00" + key
	err := e.aggregate(suffix, func(b *memoryv1.EraseAggregate, r actors.ReplyFunc) error {
		b.Key = key
		return e.s.scopes.DispatchScope(kind, id, nil, b, r)
	})
	if err != nil {
		return err
	}
	e.out.Entries = append(e.out.Entries, string(kind)+":"+id+"/"+key)
	return nil
}

// shortHash is a short id-safe digest of s.
func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}
