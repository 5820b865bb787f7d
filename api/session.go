package api

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api/wire"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// sessionHandler serves a command of a session's actor (newReq makes its
// request).
func (s *Service) sessionHandler(newReq func() proto.Message) func(*call) {
	return func(c *call) {
		asJSON, rp := c.asJSON, c.rp
		id, err := c.subj.SessionID()
		if err != nil {
			respondError(rp, asJSON, Classify(err))
			return
		}
		body := newReq()
		if !s.readBody(c, body) {
			return
		}
		if req, ok := body.(*memoryv1.CreateSessionRequest); ok && !c.who.Admin() {
			if req.GetAgentId() == "" {
				// An agent's sessions are its own: the agent comes from the
				// connection, never from the body.
				req.AgentId = c.who.Agent
			}
			if req.GetAgentType() == "" && req.GetAgentId() == c.who.Agent {
				// Likewise its type: the caller's own agent is of the
				// type its tenants entry gives (a type in the body is
				// checked against it by the actor).
				req.AgentType = c.who.AgentType
			}
			if s.rm == nil {
				s.handOff(rp, asJSON, func(reply actors.ReplyFunc) error { return s.d.Dispatch(id, c.who, req, s.tokened(id, reply)) })
				return
			}
			s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
				if err := s.checkSessionQuota(c.who, req); err != nil {
					reply(nil, err)
					return
				}
				s.dispatch(id, c.who, req, s.noteSession(c.who, id, reply))
			})
			return
		}
		if app, ok := body.(*memoryv1.AppendRequest); ok {
			offload, q := s.needsOffload(app), latestUserText(app)
			if offload || (q != "" && s.rm != nil) {
				s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
					s.appendWithSearch(ctx, c.who, id, app, offload, q, c.r.Flush, s.noteSession(c.who, id, s.consolidateAfter(id, app, reply)))
				})
				return
			}
		}
		if _, ok := body.(*memoryv1.ContextRequest); ok {
			s.handOff(rp, asJSON, func(reply actors.ReplyFunc) error { return s.d.Dispatch(id, c.who, body, s.hydrated(reply)) })
			return
		}
		s.handOff(rp, asJSON, func(reply actors.ReplyFunc) error {
			return s.d.Dispatch(id, c.who, body, s.noteSession(c.who, id, s.consolidateAfter(id, body, reply)))
		})
	}
}

// hydrated wraps the reply of a context request: the memory section's
// texts are read from the scopes (segmented.HydrateMemory; the log keeps
// references, so an erased entry is in no context). Without the
// projection the referenced items are left out.
func (s *Service) hydrated(reply actors.ReplyFunc) actors.ReplyFunc {
	return func(m proto.Message, err error) {
		if cx, ok := m.(*memoryv1.ContextReply); ok && err == nil {
			var src segmented.Sources
			if s.entries != nil {
				src.Entry, src.Key = s.entries.EntryText, s.entries.EntryKey
			}
			if s.rm != nil {
				src.Message, src.Summary = s.rm.MessageAt, s.rm.SummaryAt
			}
			m = segmented.Hydrate(cx, src)
		}
		reply(m, err)
	}
}

// readBody decodes c's body into body; on failure it answers 400 and
// reports false.
func (s *Service) readBody(c *call, body proto.Message) bool {
	if err := wire.Decode(c.r.Data, c.asJSON, body); err != nil {
		c.fail(err)
		return false
	}
	return true
}

// answer is the ReplyFunc that answers rp and marks the request done.
func (s *Service) answer(rp replier, asJSON bool) actors.ReplyFunc {
	return func(m proto.Message, err error) {
		defer s.inflight.Done()
		if err != nil {
			respondError(rp, asJSON, Classify(err))
			return
		}
		respond(rp, asJSON, m)
	}
}

// handOff gives a request to an actor without blocking the subscription;
// the actor answers when the command is stored (or refused).
func (s *Service) handOff(rp replier, asJSON bool, dispatch func(actors.ReplyFunc) error) {
	if !s.begin(rp, asJSON) {
		return
	}
	reply := s.answer(rp, asJSON)
	if err := dispatch(reply); err != nil {
		reply(nil, err)
	}
}

// begin counts one request in flight, unless the service stopped: then it
// answers 503 and reports false. While Stop drains, requests still begin:
// they are forwarded to their new owners or served (a stopping
// node forwards what still reaches it).
func (s *Service) begin(rp replier, asJSON bool) bool {
	if !s.inflight.Begin() {
		respondError(rp, asJSON, &Error{Code: 503, Message: "the node is stopping; retry on another node or later"})
		return false
	}
	return true
}

// checkSessionQuota refuses (413 max_sessions) a session beyond the
// caller's bound, counted by its agent (or by the session's user for a
// caller without an agent). The count comes from the projection, so a
// burst of creates may pass the bound by what the projection has not
// applied yet (milliseconds).
func (s *Service) checkSessionQuota(who *tenancy.Caller, req *memoryv1.CreateSessionRequest) error {
	limit := who.Limits.MaxSessions
	user, agent := req.GetUserId(), who.Agent
	if agent == "" && user == "" {
		return nil // refused by the session actor (CreateSession)
	}
	n, err := s.rm.CountSessions(user, agent, limit)
	if err != nil {
		return err
	}
	if n >= limit {
		return &Error{Code: 413, Field: "max_sessions", Message: fmt.Sprintf("this caller has %d sessions, the most it may have", n)}
	}
	return nil
}
