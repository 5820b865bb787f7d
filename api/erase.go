package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/largedata"
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

// Ledger records erase requests in the removal ledger (DESIGN §12): the
// plan first (LogRemoval.planned: what the request covers), each planned
// item then erased by its actor under a removal of its own, the plan's
// completion last. A crash in between is finished by the node (RunPlan).
type Ledger interface {
	// Load reads removal id's records.
	Load(ctx context.Context, id string) (events.RemovalRecords, error)
	// Plan records rm and returns its sequence.
	Plan(ctx context.Context, rm *memoryv1.LogRemoval) (uint64, error)
	// Complete records the completion of removal id (recorded at seq).
	Complete(ctx context.Context, id string, seq uint64) (uint64, error)
	// End is the log's last sequence now: a plan made from the projection
	// waits until it applied that far (every session stored before the
	// request is listed).
	End(ctx context.Context) (uint64, error)
}

// eraseRun is one erase request: its plan, then the receipts of its items.
type eraseRun struct {
	s       *Service
	ctx     context.Context
	id      string // the request's removal id (its plan's)
	target  string
	by, why string
	plan    []string
}

func (s *Service) newEraseRun(ctx context.Context, c *call, target string, req *memoryv1.EraseRequest) *eraseRun {
	return &eraseRun{
		s: s, ctx: ctx, id: removalID(target, c.who, req.GetCommandId()), target: target,
		by: c.who.Principal, why: req.GetReason(),
	}
}

// SessionItems are the plan items (LogRemoval.planned) of session id's
// own data: the session, its session scope, and its large data dataIDs
// (a retention erase plans these alone; an erase request adds the
// session's copies elsewhere).
func SessionItems(id string, dataIDs []string) []string {
	items := []string{events.KindSession + "." + id, actors.AggregateKind(sharedmem.KindSession) + "." + id}
	for _, d := range dataIDs {
		items = append(items, largedata.Kind+"."+d)
	}
	return items
}

// sessionPlan is what erasing session id covers: the session, its
// session scope, the large data it stored (tool results its appends
// offloaded, owner "session:<id>"), and the entries of other scopes that
// came from it (published values and extracted facts name it in
// agentmem.source_session).
//
// A plan read from the projection is made once it applied the log's end
// (projectedToEnd, by the caller): what was stored before the request is
// in it.
func (s *Service) sessionPlan(id string) ([]string, error) {
	var data []string
	if s.rm != nil && s.data != nil {
		var err error
		if data, err = s.rm.DataOwnedBy("session:" + id); err != nil {
			return nil, err
		}
	}
	plan := SessionItems(id, data)
	if s.scopes != nil && s.entries != nil {
		// What came from the session into other scopes: values it
		// published, facts consolidation extracted from it, episode
		// summaries built from one of its episodes (any version).
		items, err := s.copiesFrom(SourceSessionKey, SummarySessionKey, id, sharedmem.KindSession)
		if err != nil {
			return nil, err
		}
		plan = append(plan, items...)
	}
	return dedupe(plan), nil
}

func scopeItem(kind sharedmem.Kind, id string) string { return actors.AggregateKind(kind) + "." + id }

func entryItem(kind sharedmem.Kind, id, key string) string {
	return "entry:" + string(kind) + ":" + id + ":" + key
}

// run records the plan (or finds the one a retry of the request
// recorded), erases every item, records the completion and waits until
// the projection applied it.
func (e *eraseRun) run() (*memoryv1.EraseReceipt, error) {
	if e.s.ledger == nil {
		return nil, &Error{Code: 501, Message: "this node keeps no removal ledger: erase is not served"}
	}
	rec, err := e.s.ledger.Load(e.ctx, e.id)
	if err != nil {
		return nil, &Error{Code: 503, Message: "read the removal ledger: " + err.Error()}
	}
	seq := rec.RemovalSeq
	if rec.Removal != nil {
		e.plan = rec.Removal.GetPlanned() // a retry: the plan recorded stands
	} else {
		rm := &memoryv1.LogRemoval{Id: e.id, Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: e.target,
			RequestedBy: e.by, Why: e.why, AtUnixNano: time.Now().UnixNano(), Planned: e.plan}
		if seq, err = e.s.ledger.Plan(e.ctx, rm); err != nil {
			return nil, &Error{Code: 503, Message: "record the erase: " + err.Error()}
		}
	}
	rc, err := RunPlan(e.ctx, e.s.d, e.s.scopes, e.s.data, &memoryv1.LogRemoval{Id: e.id, Target: e.target, RequestedBy: e.by, Why: e.why, Planned: e.plan})
	if err != nil {
		return nil, err
	}
	done := rec.DoneSeq
	if done == 0 {
		if done, err = e.s.ledger.Complete(e.ctx, e.id, seq); err != nil {
			return nil, &Error{Code: 503, Message: "record the erase's completion: " + err.Error()}
		}
	}
	rc.Target, rc.Physical, rc.RemovalId, rc.RemovalSeq = e.target, physicalNote, e.id, max(rc.RemovalSeq, done)
	if e.s.rm != nil {
		if err := e.s.rm.WaitFor(e.ctx, rc.RemovalSeq); err != nil {
			return nil, &Error{Code: 503, Message: fmt.Sprintf("erased from the log, but the read model has not applied it yet (retry with the same command_id): %v", err)}
		}
	}
	rc.ErasedUnixNano = time.Now().UnixNano()
	return rc, nil
}

// RunPlan erases every item plan.planned names, each by its actor under
// its own removal (events.PlannedRemovalID), and returns what went. An
// item already erased is done again as a no-op (its removal is found
// completed; a session or scope gone answers an empty receipt). The node
// calls it for a plan a crash interrupted.
func RunPlan(ctx context.Context, d Dispatcher, scopes ScopeDispatcher, data DataStore, plan *memoryv1.LogRemoval) (*memoryv1.EraseReceipt, error) {
	out := &memoryv1.EraseReceipt{}
	for _, item := range plan.GetPlanned() {
		body := &memoryv1.EraseAggregate{RemovalId: events.PlannedRemovalID(plan.GetId(), item), Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE,
			Target: plan.GetTarget(), RequestedBy: plan.GetRequestedBy(), Why: plan.GetWhy()}
		if id, ok := strings.CutPrefix(item, largedata.Kind+"."); ok {
			if data == nil {
				return out, fmt.Errorf("api: plan item %q: no large data served", item)
			}
			seq, n, err := data.Erase(ctx, id, &memoryv1.LogRemoval{Id: body.GetRemovalId(), Reason: body.GetReason(),
				Target: body.GetTarget(), RequestedBy: body.GetRequestedBy(), Why: body.GetWhy()})
			if err != nil {
				return out, err
			}
			out.Messages += n
			out.RemovalSeq = max(out.RemovalSeq, seq)
			out.Data = append(out.Data, id)
			continue
		}
		var dispatch func(actors.ReplyFunc) error
		switch kind, rest, _ := strings.Cut(item, "."); {
		case strings.HasPrefix(item, "entry:"):
			parts := strings.SplitN(item, ":", 4)
			if len(parts) != 4 || scopes == nil {
				return out, fmt.Errorf("api: plan item %q: not an entry of a served scope", item)
			}
			body.Key = parts[3]
			dispatch = func(r actors.ReplyFunc) error {
				return scopes.DispatchScope(sharedmem.Kind(parts[1]), parts[2], nil, body, r)
			}
		case kind == events.KindSession:
			dispatch = func(r actors.ReplyFunc) error { return d.Dispatch(rest, nil, body, r) }
		case scopes != nil:
			sk := ScopeKindOf(kind)
			dispatch = func(r actors.ReplyFunc) error { return scopes.DispatchScope(sk, rest, nil, body, r) }
		default:
			return out, fmt.Errorf("api: plan item %q: no scopes served", item)
		}
		m, err := CallActor(ctx, dispatch)
		if isNotFound(err) && strings.HasPrefix(item, "entry:") && len(plan.GetPlanned()) > 1 {
			continue // a copy erased since the user's plan was made (a retry)
		}
		if err != nil {
			return out, err
		}
		r, ok := m.(*memoryv1.EraseReceipt)
		if !ok {
			return out, fmt.Errorf("api: erase of %s answered %T", item, m)
		}
		out.Messages += r.GetMessages()
		out.RemovalSeq = max(out.RemovalSeq, r.GetRemovalSeq())
		switch kind, rest, _ := strings.Cut(item, "."); {
		case strings.HasPrefix(item, "entry:"):
			out.Entries = append(out.Entries, strings.TrimPrefix(item, "entry:"))
		case kind == events.KindSession:
			out.Sessions = append(out.Sessions, rest)
		case kind != actors.AggregateKind(sharedmem.KindSession):
			out.Scopes = append(out.Scopes, string(ScopeKindOf(kind))+":"+rest)
		}
	}
	return out, nil
}

// ScopeKindOf is the scope kind of a log kind (actors.AggregateKind
// reversed).
func ScopeKindOf(logKind string) sharedmem.Kind {
	for _, k := range sharedmem.Kinds() {
		if actors.AggregateKind(k) == logKind {
			return k
		}
	}
	return sharedmem.Kind(logKind)
}

// CallActor sends a body to an actor and waits for its reply.
func CallActor(ctx context.Context, dispatch func(actors.ReplyFunc) error) (proto.Message, error) {
	ch := make(chan struct {
		m   proto.Message
		err error
	}, 1)
	if err := dispatch(func(m proto.Message, err error) {
		ch <- struct {
			m   proto.Message
			err error
		}{m, err}
	}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.m, r.err
	case <-ctx.Done():
		return nil, &Error{Code: 503, Message: "timed out waiting for the actor: " + ctx.Err().Error()}
	}
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
		if err := s.projectedToEnd(ctx); err != nil {
			reply(nil, err)
			return
		}
		if e.plan, err = s.sessionPlan(id); err != nil {
			reply(nil, err)
			return
		}
		reply(e.run())
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
		if s.scopes == nil {
			reply(nil, &Error{Code: 501, Message: "this node serves no scopes"})
			return
		}
		e := s.newEraseRun(ctx, c, string(t.kind)+":"+t.id, req)
		e.plan = []string{scopeItem(t.kind, t.id)}
		reply(e.run())
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
		plan, err := s.userPlan(ctx, user)
		if err != nil {
			reply(nil, err)
			return
		}
		e.plan = plan
		reply(e.run())
	})
}

// userPlan lists what erasing user covers: every session of the user (as
// the projection lists them once it applied what was stored before the
// request) with its session scope, the user:<id> scope, and the entries
// of other scopes the user's sessions published there.
func (s *Service) userPlan(ctx context.Context, user string) ([]string, error) {
	if err := s.projectedToEnd(ctx); err != nil {
		return nil, err
	}
	var plan []string
	req := &memoryv1.ListSessionsRequest{UserId: user, Limit: 100}
	for {
		list, next, err := s.rm.ListSessions(req)
		if err != nil {
			return nil, err
		}
		for _, si := range list {
			items, err := s.sessionPlan(si.GetSessionId())
			if err != nil {
				return nil, err
			}
			plan = append(plan, items...)
		}
		if next == "" {
			break
		}
		req.PageToken = next
	}
	if s.scopes == nil {
		return plan, nil
	}
	plan = append(plan, scopeItem(sharedmem.KindUser, user))
	if s.entries == nil {
		return plan, nil
	}
	items, err := s.copiesFrom(SourceUserKey, SummaryUserKey, user, sharedmem.KindUser)
	if err != nil {
		return nil, err
	}
	plan = append(plan, items...)
	// The user's own scope goes whole: no entry of it one by one.
	own := "entry:" + string(sharedmem.KindUser) + ":" + user + ":"
	plan = slices.DeleteFunc(plan, func(it string) bool { return strings.HasPrefix(it, own) })
	return dedupe(plan), nil
}

// copiesFrom lists, as plan items, the entries of other scopes that came
// from id (a session or a user): those whose metadata source key is id,
// and the episode summaries naming it (summaryKey+id). The scope own of
// kind own and id is left out: it is erased whole.
func (s *Service) copiesFrom(sourceKey, summaryKey, id string, own sharedmem.Kind) ([]string, error) {
	copies, err := s.entries.EntriesWithMetadata(sourceKey, id)
	if err != nil {
		return nil, err
	}
	summaries, err := s.entries.EntriesWithMetadata(summaryKey+id, id)
	if err != nil {
		return nil, err
	}
	var items []string
	for _, ref := range append(copies, summaries...) {
		if ref.Kind != own || ref.ID != id {
			items = append(items, entryItem(ref.Kind, ref.ID, ref.Key))
		}
	}
	return items, nil
}

// dedupe drops repeated items, keeping the first of each.
func dedupe(items []string) []string {
	seen := make(map[string]bool, len(items))
	return slices.DeleteFunc(items, func(it string) bool {
		if seen[it] {
			return true
		}
		seen[it] = true
		return false
	})
}

// projectedToEnd waits until the projection (when the node has one)
// applied the log's end as it is now, so that an erase plan read from it
// lists everything stored before the request: the sessions of a user, the
// copies of a session's values (BenchmarkErase saw a plan list 46 of 100
// sessions just written; TestEraseSessionTakesItsFacts a fact just
// extracted missing).
func (s *Service) projectedToEnd(ctx context.Context) error {
	if s.rm == nil {
		return nil
	}
	if s.ledger == nil {
		return &Error{Code: 501, Message: "this node keeps no removal ledger: erase is not served"}
	}
	end, err := s.ledger.End(ctx)
	if err != nil {
		return &Error{Code: 503, Message: "read the log's end: " + err.Error()}
	}
	if err := s.rm.WaitFor(ctx, end); err != nil {
		return &Error{Code: 503, Message: fmt.Sprintf("the projection has not applied the log up to %d yet: %v", end, err)}
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

// Metadata keys a published copy carries (publish): the user and session
// it came from. A user erase erases the copies of its user's values.
const (
	SourceUserKey    = "agentmem.source_user"
	SourceSessionKey = "agentmem.source_session"
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
		target := "entry:" + string(t.kind) + ":" + t.id + ":" + d.GetKey()
		if s.scopes == nil {
			reply(nil, &Error{Code: 501, Message: "this node serves no scopes"})
			return
		}
		e := s.newEraseRun(ctx, c, target, &memoryv1.EraseRequest{CommandId: d.GetCommandId(), Reason: d.GetReason()})
		e.plan = []string{entryItem(t.kind, t.id, d.GetKey())}
		reply(e.run())
	})
}
