package api

import (
	"context"
	"strings"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/consolidation"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// maxConflicts bounds one conflicts reply.
const maxConflicts = 200

// conflictsHandler serves mem.v1.scope.<kind>.<id>.conflicts: the values
// consolidation proposed for review (strategy "review"), each beside the
// key's current value.
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
	limit := int(req.GetLimit())
	if limit <= 0 || limit > maxConflicts {
		limit = maxConflicts
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		m, err := s.call(ctx, func(r actors.ReplyFunc) error {
			return s.scopes.DispatchScope(t.kind, t.id, nil, &memoryv1.ListEntriesRequest{Prefix: consolidation.ReviewPrefix, Limit: uint32(limit)}, r)
		})
		if err != nil {
			reply(nil, err)
			return
		}
		out := &memoryv1.ConflictsReply{}
		for _, p := range m.(*memoryv1.ListEntriesReply).GetEntries() {
			key := strings.TrimPrefix(p.GetKey(), consolidation.ReviewPrefix)
			cur, err := s.getEntry(ctx, t.kind, t.id, key)
			if err != nil && !isNotFound(err) {
				reply(nil, err)
				return
			}
			out.Conflicts = append(out.Conflicts, &memoryv1.Conflict{Key: key, Current: cur, Proposed: p})
		}
		reply(out, nil)
	})
}

// settleHandler serves mem.v1.scope.<kind>.<id>.settle: accept puts the
// proposed value as the key's next version (the old one stays in its
// history), then the proposal is deleted; otherwise only the proposal is.
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
		by := byOf(t, c.who, req.GetBy())
		p, err := s.getEntry(ctx, t.kind, t.id, consolidation.ReviewPrefix+req.GetKey())
		if isNotFound(err) {
			// A retry of a settlement done (its reply lost): the
			// proposal's delete of this command id answers duplicate.
			s.settledBefore(ctx, t, req, by, err, reply)
			return
		}
		if err != nil {
			reply(nil, err)
			return
		}
		var res *memoryv1.EntryReply
		if req.GetAccept() && !p.GetDeleted() {
			md := p.GetMetadata()
			delete(md, consolidation.MetaProposedFor)
			anyVersion := int64(-1)
			m, err := s.call(ctx, func(r actors.ReplyFunc) error {
				return s.scopes.DispatchScope(t.kind, t.id, nil, &memoryv1.PutEntryRequest{CommandId: req.GetCommandId(), Key: req.GetKey(),
					Value: p.GetValue(), ContentType: p.GetContentType(), MemoryType: p.GetMemoryType(), Importance: p.GetImportance(),
					Tags: p.GetTags(), Metadata: md, By: by, ExpectedVersion: &anyVersion}, r)
			})
			if err != nil {
				reply(nil, err)
				return
			}
			res = m.(*memoryv1.EntryReply)
		}
		if !p.GetDeleted() {
			if _, err := s.call(ctx, func(r actors.ReplyFunc) error {
				return s.scopes.DispatchScope(t.kind, t.id, nil, &memoryv1.DeleteEntryRequest{CommandId: req.GetCommandId() + "-settled", Key: consolidation.ReviewPrefix + req.GetKey(), By: by}, r)
			}); err != nil {
				reply(nil, err)
				return
			}
		}
		if res == nil {
			cur, err := s.getEntry(ctx, t.kind, t.id, req.GetKey())
			if err != nil && !isNotFound(err) {
				reply(nil, err)
				return
			}
			res = &memoryv1.EntryReply{Result: &memoryv1.MutationReply{}, Entry: cur}
		}
		s.noteWrites(c.who, reply)(res, nil)
	})
}

// settledBefore answers a settle whose proposal is gone: when this command
// id deleted it (a retry), the key's current entry, marked duplicate;
// otherwise notFound (nothing waits for review under the key).
func (s *Service) settledBefore(ctx context.Context, t scopeTarget, req *memoryv1.SettleConflictRequest, by string, notFound error, reply actors.ReplyFunc) {
	m, err := s.call(ctx, func(r actors.ReplyFunc) error {
		return s.scopes.DispatchScope(t.kind, t.id, nil, &memoryv1.DeleteEntryRequest{CommandId: req.GetCommandId() + "-settled", Key: consolidation.ReviewPrefix + req.GetKey(), By: by}, r)
	})
	if err != nil || !m.(*memoryv1.EntryReply).GetResult().GetDuplicate() {
		reply(nil, notFound)
		return
	}
	cur, err := s.getEntry(ctx, t.kind, t.id, req.GetKey())
	if err != nil && !isNotFound(err) {
		reply(nil, err)
		return
	}
	reply(&memoryv1.EntryReply{Result: &memoryv1.MutationReply{Duplicate: true, Version: cur.GetVersion()}, Entry: cur}, nil)
}
