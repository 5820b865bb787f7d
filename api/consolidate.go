package api

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/consolidation"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Consolidation's transport: mem.v1.session.<id>.consolidate, the runs a
// terminate (or every N user turns) starts, and the port through which
// package consolidation reaches the scope actors and the read model. The
// run itself (what is read, extracted and written, exactly once) is
// package consolidation's.
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
	p := consolidationPort{s}
	return consolidation.New(cfg, p, p)
}

// consolidateEndpoint serves mem.v1.session.<id>.consolidate (the
// dispatcher checked the caller may change the session). The reply comes when the run finished
// (ConsolidateReply.done, and its marker) or failed.
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

// consolidationPort is the api's side of consolidation's ports: the scope
// actors and the session actors reached as the node itself (the endpoint
// checked the caller), and the read model.
type consolidationPort struct{ s *Service }

var (
	_ consolidation.Scopes   = consolidationPort{}
	_ consolidation.Sessions = consolidationPort{}
)

// portErr marks a 404 ErrNotFound and a 409 ErrConflict, keeping err.
func portErr(err error) error {
	if err == nil {
		return nil
	}
	switch Classify(err).Code {
	case 404:
		return fmt.Errorf("%w: %w", consolidation.ErrNotFound, err)
	case 409:
		return fmt.Errorf("%w: %w", consolidation.ErrConflict, err)
	}
	return err
}

func (p consolidationPort) scope(ctx context.Context, t consolidation.Scope, body any) (proto.Message, error) {
	m, err := p.s.call(ctx, func(reply actors.ReplyFunc) error {
		return p.s.scopes.DispatchScope(t.Kind, t.ID, nil, body, reply)
	})
	return m, portErr(err)
}

func (p consolidationPort) Get(ctx context.Context, t consolidation.Scope, key string) (*memoryv1.Entry, error) {
	m, err := p.scope(ctx, t, &memoryv1.GetEntryRequest{Key: key})
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.EntryReply).GetEntry(), nil
}

func (p consolidationPort) History(ctx context.Context, t consolidation.Scope, key string) ([]*memoryv1.Entry, error) {
	m, err := p.scope(ctx, t, &memoryv1.HistoryRequest{Key: key})
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.HistoryReply).GetVersions(), nil
}

func (p consolidationPort) List(ctx context.Context, t consolidation.Scope, prefix, token string) ([]*memoryv1.Entry, string, error) {
	m, err := p.scope(ctx, t, &memoryv1.ListEntriesRequest{Prefix: prefix, Limit: sharedmem.MaxListLimit, PageToken: token})
	if err != nil {
		return nil, "", err
	}
	r := m.(*memoryv1.ListEntriesReply)
	return r.GetEntries(), r.GetNextPageToken(), nil
}

func (p consolidationPort) Put(ctx context.Context, t consolidation.Scope, req *memoryv1.PutEntryRequest) (*memoryv1.EntryReply, error) {
	m, err := p.scope(ctx, t, req)
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.EntryReply), nil
}

func (p consolidationPort) Delete(ctx context.Context, t consolidation.Scope, req *memoryv1.DeleteEntryRequest) (*memoryv1.EntryReply, error) {
	m, err := p.scope(ctx, t, req)
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.EntryReply), nil
}

func (p consolidationPort) Config(ctx context.Context, t consolidation.Scope) (*memoryv1.ScopeConfig, error) {
	m, err := p.scope(ctx, t, actors.ReadScopeConfig{})
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.ConfigureScopeReply).GetConfig(), nil
}

func (p consolidationPort) Info(ctx context.Context, id string) (*memoryv1.SessionInfo, error) {
	info, err := p.s.sessionInfo(ctx, id)
	return info, portErr(err)
}

func (p consolidationPort) WaitFor(ctx context.Context, seq uint64) error {
	return p.s.rm.WaitFor(ctx, seq)
}

func (p consolidationPort) Messages(_ context.Context, id string, offset, limit int) ([]*memoryv1.Message, error) {
	page, _, err := p.s.rm.Recall(id, offset, min(limit, MaxRecallLimit))
	return page, err
}

func (p consolidationPort) Terminated(_ context.Context, token string) ([]*memoryv1.SessionIndexEntry, string, error) {
	return p.s.rm.ListSessions(&memoryv1.ListSessionsRequest{Status: memoryv1.SessionStatus_SESSION_STATUS_TERMINATED, Limit: 100, PageToken: token})
}
