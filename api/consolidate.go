package api

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api/limits"
	"github.com/agentmem/agentmem/consolidation"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Consolidation's operations: mem.v1.session.<id>.consolidate, the runs a
// terminate (or every N user turns) starts, and the review of what a run
// could not settle (mem.v1.scope.<kind>.<id>.conflicts, .settle). The
// run, the review and the port through which both reach the scope actors
// and the read model (consolidation.ActorPort) are package consolidation's.
//
// Tenancy: the caller must be allowed to change the session; the targets
// come from the session itself (its user_id and agent_id), never from a
// body, so a user's facts land only in that user's scope.

// FactExtractor extracts facts (consolidation.Extractor).
type FactExtractor = consolidation.Extractor

// FactMerger merges two values of a fact (consolidation.Merger).
type FactMerger = consolidation.Merger

// The erase plans find a summary by these keys (consolidation writes them).
const (
	SummarySessionKey = consolidation.SummarySessionKey
	SummaryUserKey    = consolidation.SummaryUserKey
)

// newConsolidator builds the service's Consolidator (nil without the
// scopes or the read model: consolidation needs both).
func (s *Service) newConsolidator() (*consolidation.Consolidator, error) {
	if s.scopes == nil || s.rm == nil {
		return nil, nil
	}
	cfg := consolidation.DefaultConfig()
	cfg.OnTerminate, cfg.EveryTurns = s.cfg.ConsolidateOnTerminate, s.cfg.ConsolidateEveryTurns
	cfg.SummaryAfter, cfg.Extractor, cfg.Merger = s.cfg.EpisodeSummaryAfter, s.cfg.Extractor, s.cfg.Merger
	cfg.Logger, cfg.FactOutcomes, cfg.Errors = s.logger, s.metrics.ConsolidatedFacts, s.metrics.ConsolidationErrors
	p := s.consolidationPort()
	return consolidation.New(cfg, p, p)
}

// consolidateEndpoint serves mem.v1.session.<id>.consolidate (its
// declared access: a caller that may change the session). The reply comes
// when the run finished (ConsolidateReply.done, and its marker) or failed.
func (s *Service) consolidateEndpoint(ctx context.Context, _ *call, id string, req proto.Message, reply actors.ReplyFunc) {
	if s.cons == nil {
		reply(nil, &Error{Code: 503, Message: "consolidation needs the scopes and the read model"})
		return
	}
	out, err := s.cons.Consolidate(ctx, id, req.(*memoryv1.ConsolidateRequest).GetDryRun())
	if errors.Is(err, consolidation.ErrBehind) {
		err = &Error{Code: 503, Message: err.Error()}
	}
	reply(out, err)
}

// consolidateAfter wraps the reply of a session command: after a stored
// TERMINATE (ConsolidateOnTerminate), or an append whose user turn is a
// multiple of ConsolidateEveryTurns, the session is consolidated in the
// background. A terminate's reply says where the run's end will show
// (StatusReply.consolidation: the marker the run writes last); it waits
// for one read of the session's owner, never for the run.
func (s *Service) consolidateAfter(id string, body any, reply actors.ReplyFunc) actors.ReplyFunc {
	if s.cons == nil {
		return reply
	}
	terminate, every := false, false
	switch r := body.(type) {
	case *memoryv1.StatusRequest:
		terminate = s.cfg.ConsolidateOnTerminate && r.GetAction() == memoryv1.StatusAction_STATUS_ACTION_TERMINATE
	case *memoryv1.AppendRequest:
		every = s.cfg.ConsolidateEveryTurns > 0 && latestUserText(r) != ""
	}
	switch {
	case every:
		return func(m proto.Message, err error) {
			reply(m, err)
			if err == nil {
				s.cons.Later(id, true)
			}
		}
	case terminate:
		return func(m proto.Message, err error) {
			sr, ok := m.(*memoryv1.StatusReply)
			if err != nil || !ok {
				reply(m, err)
				return
			}
			queued := s.cons.Later(id, false)
			// The reply is called on the session's actor: reading the
			// session from it must not block that actor.
			s.workers.Go(func() {
				ctx, cancel := context.WithTimeout(s.ctx, s.cfg.QueryTimeout)
				defer cancel()
				out := proto.CloneOf(sr)
				if info, err := s.sessionInfo(ctx, id); err == nil {
					if mk := consolidation.Marker(info); mk != nil {
						mk.Queued = queued
						out.Consolidation = mk
					}
				}
				reply(out, nil)
			})
		}
	}
	return reply
}

// ResumeConsolidation consolidates, in the background, the terminated
// sessions a crash left without a marker (consolidation.Consolidator.Resume).
func (s *Service) ResumeConsolidation(logEnd uint64) {
	if s.cons != nil {
		s.cons.Resume(logEnd)
	}
}

// hiddenFromMemory: entries the memory section never shows
// (consolidation.HiddenFromMemory).
func hiddenFromMemory(e *memoryv1.Entry) bool { return consolidation.HiddenFromMemory(e) }

// consolidationPort is consolidation's port over this service's actors
// and read model.
func (s *Service) consolidationPort() consolidation.ActorPort {
	return consolidation.ActorPort{Scopes: s.scopes, Sessions: s.d, Read: s.rm, MaxRecall: limits.MaxRecallLimit}
}

// conflictsHandler serves mem.v1.scope.<kind>.<id>.conflicts: the values
// consolidation proposed for review (consolidation.Conflicts).
func (s *Service) conflictsHandler(c *call) {
	t, err := c.scope()
	if err != nil {
		c.fail(err)
		return
	}
	req := &memoryv1.ConflictsRequest{}
	if !s.readBody(c, req) {
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		reply(consolidation.Conflicts(ctx, s.consolidationPort(), consolidation.Scope{Kind: t.kind, ID: t.id}, int(req.GetLimit())))
	})
}

// settleHandler serves mem.v1.scope.<kind>.<id>.settle: accept or drop a
// proposal (consolidation.Settle), attributed as an entry change is.
func (s *Service) settleHandler(c *call) {
	t, err := c.scope()
	if err != nil {
		c.fail(err)
		return
	}
	req := &memoryv1.SettleConflictRequest{}
	if !s.readBody(c, req) {
		return
	}
	if err := sharedmem.ValidateKey(req.GetKey()); err != nil {
		c.fail(err)
		return
	}
	if req.GetCommandId() == "" {
		c.fail(&Error{Code: 400, Field: "command_id", Message: "required: a retry of the same settlement reuses it"})
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		res, err := consolidation.Settle(ctx, s.consolidationPort(), consolidation.Scope{Kind: t.kind, ID: t.id}, req, byOf(t, c.who, req.GetBy()))
		if err != nil {
			reply(nil, err)
			return
		}
		s.noteWrites(c.who, t.id, reply)(res, nil)
	})
}
