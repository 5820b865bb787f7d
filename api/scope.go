package api

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// ScopeDispatcher hands a request to the owner of a scope (actors.Directory).
type ScopeDispatcher interface {
	DispatchScope(kind sharedmem.Kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error
}

var _ ScopeDispatcher = (*actors.Directory)(nil)

// entryOps are the operations of mem.v1.agent.<id>.<op> and
// mem.v1.scope.<kind>.<id>.<op> served by the scope's actor, the
// namespace operations (namespace.go) among them.
var entryOps = map[string]func() proto.Message{
	"put":       func() proto.Message { return &memoryv1.PutEntryRequest{} },
	"get":       func() proto.Message { return &memoryv1.GetEntryRequest{} },
	"delete":    func() proto.Message { return &memoryv1.DeleteEntryRequest{} },
	"list":      func() proto.Message { return &memoryv1.ListEntriesRequest{} },
	"history":   func() proto.Message { return &memoryv1.HistoryRequest{} },
	"rollback":  func() proto.Message { return &memoryv1.RollbackEntryRequest{} },
	"configure": func() proto.Message { return &memoryv1.ConfigureScopeRequest{} },
	"archive":   func() proto.Message { return &memoryv1.ArchiveEntriesRequest{} },
	"restore":   func() proto.Message { return &memoryv1.RestoreEntryRequest{} },
	"export":    func() proto.Message { return &memoryv1.ExportEntriesRequest{} },
	"import":    func() proto.Message { return &memoryv1.ImportEntriesRequest{} },
}

// scopeTarget is the scope a subject addresses.
type scopeTarget struct {
	kind sharedmem.Kind
	id   string
}

// scope is the scope c's subject addresses: mem.v1.agent.<id>.<op> or
// mem.v1.scope.<kind>.<id>.<op> (the route already fixed the op).
func (c *call) scope() (scopeTarget, error) {
	kind, id, err := c.subj.ScopeTarget()
	return scopeTarget{kind, id}, err
}

// byOf is who an entry change is attributed to: the agent of an agent
// scope, the verified principal on a node with tenants, else what the body
// says (the single-user node trusts its one user). The node never trusts
// an identity the subject or the connection does not carry.
func byOf(t scopeTarget, who *tenancy.Caller, claimed string) string {
	switch {
	case t.kind == sharedmem.KindAgent:
		return t.id
	case !who.Unrestricted:
		return who.Principal
	}
	return claimed
}

// setBy overwrites the by field of an entry change with byOf.
func setBy(t scopeTarget, who *tenancy.Caller, body proto.Message) {
	switch r := body.(type) {
	case *memoryv1.PutEntryRequest:
		r.By = byOf(t, who, r.By)
	case *memoryv1.DeleteEntryRequest:
		r.By = byOf(t, who, r.By)
	case *memoryv1.RollbackEntryRequest:
		r.By = byOf(t, who, r.By)
	case *memoryv1.ArchiveEntriesRequest:
		r.By = byOf(t, who, r.By)
	case *memoryv1.RestoreEntryRequest:
		r.By = byOf(t, who, r.By)
	case *memoryv1.ImportEntriesRequest:
		r.By = byOf(t, who, r.By)
	}
}

func (s *Service) entryHandler(op string) func(*call) {
	newReq := entryOps[op]
	return func(c *call) {
		asJSON, rp := c.asJSON, c.rp
		t, err := c.scope()
		if err != nil {
			respondError(rp, asJSON, Classify(err))
			return
		}
		body := newReq()
		if !s.readBody(c, body) {
			return
		}
		setBy(t, c.who, body)
		if d, ok := body.(*memoryv1.DeleteEntryRequest); ok && d.GetErase() {
			s.eraseEntry(c, t, d)
			return
		}
		msg := s.namespaceBody(t, body)
		if c.later {
			// Access follows the session: goQuery asks its actor for the
			// owner first.
			s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
				s.dispatchScope(t.kind, t.id, c.who, msg, s.noteWrites(c.who, t.id, reply))
			})
			return
		}
		s.handOff(rp, asJSON, func(reply actors.ReplyFunc) error {
			return s.scopes.DispatchScope(t.kind, t.id, c.who, msg, s.noteWrites(c.who, t.id, reply))
		})
	}
}

// call sends body to an actor and waits for the reply (actors.Await).
func (s *Service) call(ctx context.Context, dispatch func(actors.ReplyFunc) error) (proto.Message, error) {
	return actors.Await(ctx, dispatch)
}

func (s *Service) getEntry(ctx context.Context, kind sharedmem.Kind, id, key string) (*memoryv1.Entry, error) {
	m, err := s.call(ctx, func(reply actors.ReplyFunc) error {
		return s.scopes.DispatchScope(kind, id, nil, &memoryv1.GetEntryRequest{Key: key}, reply)
	})
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.EntryReply).GetEntry(), nil
}

// sessionInfo reads session id as the node itself, unchecked (its callers
// have checked the caller, or check it against the owner it returns).
func (s *Service) sessionInfo(ctx context.Context, id string) (*memoryv1.SessionInfo, error) {
	m, err := s.call(ctx, func(reply actors.ReplyFunc) error {
		return s.d.Dispatch(id, nil, &memoryv1.GetSessionRequest{}, reply)
	})
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.GetSessionReply).GetSession(), nil
}

func isNotFound(err error) bool { return err != nil && Classify(err).Code == 404 }

// sessionScopeID reads the session id of mem.v1.scope.session.<id>.<op>, the
// only scope resolve and publish are served on; on failure it answers 400.
func sessionScopeID(c *call, op string) (string, bool) {
	t, err := c.scope()
	if err == nil && t.kind != sharedmem.KindSession {
		err = &Error{Code: 400, Field: "kind", Message: op + " is served on mem.v1.scope.session.<session id>." + op}
	}
	if err != nil {
		c.fail(err)
		return "", false
	}
	return t.id, true
}

// resolveHandler serves mem.v1.scope.session.<id>.resolve: the first of
// temp and the scopes the session's memory section reads, in the
// assembler's order, holding the key for that session.
func (s *Service) resolveHandler(c *call) {
	asJSON, rp := c.asJSON, c.rp
	sessionID, ok := sessionScopeID(c, "resolve")
	if !ok {
		return
	}
	req := &memoryv1.ResolveRequest{}
	if !s.readBody(c, req) {
		return
	}
	if err := sharedmem.ValidateKey(req.GetKey()); err != nil {
		respondError(rp, asJSON, Classify(err))
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		out, err := s.resolve(ctx, c.who, sessionID, req.GetKey())
		reply(out, err)
	})
}

// resolve looks key up for session sessionID as who: its temp state, then
// the scopes the context assembler reads for it, in its order. Each scope
// but the session's (which follows the session, reached by the temp read)
// is read only if who may read it directly (Caller.Scope: agent_type:<t>
// only by a principal whose tenants entry is of type t, whatever the
// session names), so a session naming a scope its reader is not in never
// shows that scope's entries.
func (s *Service) resolve(ctx context.Context, who *tenancy.Caller, sessionID, key string) (*memoryv1.ResolveReply, error) {
	m, err := s.call(ctx, func(reply actors.ReplyFunc) error {
		return s.d.Dispatch(sessionID, who, &memoryv1.StateRequest{Op: memoryv1.StateOp_STATE_OP_GET, Key: "temp:" + key}, reply)
	})
	if err != nil {
		return nil, err
	}
	if st := m.(*memoryv1.StateReply); st.GetFound() {
		return &memoryv1.ResolveReply{Found: true, Scope: "temp", Entry: &memoryv1.Entry{Key: key, Value: st.GetValue(), Size: uint32(len(st.GetValue()))}}, nil
	}
	info, err := s.sessionInfo(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	k := segmented.CandidateKey{Agent: info.GetAgentId(), AgentType: info.GetAgentType(),
		User: info.GetUserId(), Project: info.GetProject(), App: info.GetApp()}
	for _, r := range assemblyScopes(sessionID, k) {
		if r.kind != sharedmem.KindSession && who.Scope(string(r.kind), r.id, false) != nil {
			continue
		}
		e, err := s.getEntry(ctx, r.kind, r.id, key)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &memoryv1.ResolveReply{Found: true, Scope: r.name(), Entry: e}, nil
	}
	return &memoryv1.ResolveReply{Found: false}, nil
}

// publishHandler serves mem.v1.scope.session.<id>.publish: copy a session
// entry into the session's user or project scope.
func (s *Service) publishHandler(c *call) {
	asJSON, rp := c.asJSON, c.rp
	sessionID, ok := sessionScopeID(c, "publish")
	if !ok {
		return
	}
	req := &memoryv1.PublishRequest{}
	if !s.readBody(c, req) {
		return
	}
	if req.GetTarget() != "user" && req.GetTarget() != "project" {
		respondError(rp, asJSON, &Error{Code: 400, Field: "target", Message: fmt.Sprintf("%q: must be user or project", req.GetTarget())})
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		info, err := s.sessionInfo(ctx, sessionID)
		if err != nil {
			reply(nil, err)
			return
		}
		dst := scopeTarget{sharedmem.KindUser, info.GetUserId()}
		if req.GetTarget() == "project" {
			dst = scopeTarget{sharedmem.KindProject, info.GetProject()}
		}
		if dst.id == "" {
			reply(nil, &Error{Code: 409, Field: "target", Message: "session " + sessionID + " has no " + req.GetTarget()})
			return
		}
		if err := s.checkScope(ctx, c.who, dst, true); err != nil {
			reply(nil, err)
			return
		}
		e, err := s.getEntry(ctx, sharedmem.KindSession, sessionID, req.GetKey())
		if err != nil {
			reply(nil, err)
			return
		}
		// The copy names its source, so that erasing the user reaches it.
		e = proto.CloneOf(e)
		if e.Metadata == nil {
			e.Metadata = map[string]string{}
		}
		e.Metadata[SourceUserKey], e.Metadata[SourceSessionKey] = info.GetUserId(), sessionID
		s.dispatchScope(dst.kind, dst.id, c.who, &actors.CopyEntry{CommandID: req.GetCommandId(), Entry: e, By: byOf(dst, c.who, req.GetBy())}, s.noteWrites(c.who, dst.id, reply))
	})
}

func (s *Service) dispatchScope(kind sharedmem.Kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) {
	if err := s.scopes.DispatchScope(kind, id, who, body, reply); err != nil {
		reply(nil, err)
	}
}
