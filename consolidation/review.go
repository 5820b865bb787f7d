package consolidation

import (
	"context"
	"errors"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Review: in a scope whose conflict strategy is "review" a run files the
// value it could not settle under ReviewPrefix+key instead of writing it
// (run.go). Conflicts lists those proposals; Settle accepts or drops one.
// Both go through the scope's owner (the Scopes port), as a run does;
// the caller was checked by the operation that serves them.

// MaxConflicts bounds one Conflicts reply.
const MaxConflicts = 200

// Conflicts lists up to limit (at most MaxConflicts) proposals of scope t,
// each beside the key's current value.
func Conflicts(ctx context.Context, sc Scopes, t Scope, limit int) (*memoryv1.ConflictsReply, error) {
	if limit <= 0 || limit > MaxConflicts {
		limit = MaxConflicts
	}
	proposals, _, err := sc.List(ctx, t, ReviewPrefix, "")
	if err != nil {
		return nil, err
	}
	out := &memoryv1.ConflictsReply{}
	for _, p := range proposals[:min(len(proposals), limit)] {
		key := strings.TrimPrefix(p.GetKey(), ReviewPrefix)
		cur, err := sc.Get(ctx, t, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		out.Conflicts = append(out.Conflicts, &memoryv1.Conflict{Key: key, Current: cur, Proposed: p})
	}
	return out, nil
}

// Settle settles the proposal of req.key in scope t as by: accept puts the
// proposed value as the key's next version (the old one stays in its
// history), then the proposal is deleted; otherwise only the proposal is.
// A retry (the same command id) of a settlement done answers the key's
// current entry marked duplicate.
func Settle(ctx context.Context, sc Scopes, t Scope, req *memoryv1.SettleConflictRequest, by string) (*memoryv1.EntryReply, error) {
	p, err := sc.Get(ctx, t, ReviewPrefix+req.GetKey())
	if errors.Is(err, ErrNotFound) {
		// A retry of a settlement done (its reply lost): the
		// proposal's delete of this command id answers duplicate.
		return settledBefore(ctx, sc, t, req, by, err)
	}
	if err != nil {
		return nil, err
	}
	var res *memoryv1.EntryReply
	if req.GetAccept() && !p.GetDeleted() {
		md := p.GetMetadata()
		delete(md, MetaProposedFor)
		anyVersion := int64(-1)
		res, err = sc.Put(ctx, t, &memoryv1.PutEntryRequest{CommandId: req.GetCommandId(), Key: req.GetKey(),
			Value: p.GetValue(), ContentType: p.GetContentType(), MemoryType: p.GetMemoryType(), Importance: p.GetImportance(),
			Tags: p.GetTags(), Metadata: md, By: by, ExpectedVersion: &anyVersion})
		if err != nil {
			return nil, err
		}
	}
	if !p.GetDeleted() {
		if _, err := sc.Delete(ctx, t, settleDelete(req, by)); err != nil {
			return nil, err
		}
	}
	if res == nil {
		cur, err := sc.Get(ctx, t, req.GetKey())
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		res = &memoryv1.EntryReply{Result: &memoryv1.MutationReply{}, Entry: cur}
	}
	return res, nil
}

// settleDelete deletes the proposal a settlement settles, under a command
// id of its own (so that a retry of the settlement is told apart).
func settleDelete(req *memoryv1.SettleConflictRequest, by string) *memoryv1.DeleteEntryRequest {
	return &memoryv1.DeleteEntryRequest{CommandId: req.GetCommandId() + "-settled", Key: ReviewPrefix + req.GetKey(), By: by}
}

// settledBefore answers a settle whose proposal is gone: when this command
// id deleted it (a retry), the key's current entry, marked duplicate;
// otherwise notFound (nothing waits for review under the key).
func settledBefore(ctx context.Context, sc Scopes, t Scope, req *memoryv1.SettleConflictRequest, by string, notFound error) (*memoryv1.EntryReply, error) {
	m, err := sc.Delete(ctx, t, settleDelete(req, by))
	if err != nil || !m.GetResult().GetDuplicate() {
		return nil, notFound
	}
	cur, err := sc.Get(ctx, t, req.GetKey())
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return &memoryv1.EntryReply{Result: &memoryv1.MutationReply{Duplicate: true, Version: cur.GetVersion()}, Entry: cur}, nil
}
