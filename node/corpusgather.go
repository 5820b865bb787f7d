package node

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The reads with no single owner gather every corpus partition (local or
// asked of its owner, in parallel) and merge the answers in the order a
// store of the whole log gives.

// gather runs read for every corpus partition, in parallel; the first
// error in partition order is returned.
func (r *corpusReadModel) gather(read func(part int) error) error {
	errs := make([]error, r.parts)
	var wg sync.WaitGroup
	for c := range r.parts {
		wg.Go(func() { errs[c] = read(c) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ListSessions lists the sessions of a user (from the user's partition),
// or of an agent or everyone (every partition's page merged in key order,
// projections.SessionListKey). The page token is a store's: the key of
// the page's last session, which each partition continues after, so the
// pages are those of a store of the whole log. One difference, with a
// status filter only: where a store of the whole log hands a token to an
// empty last page (sessions of another status follow the page), the
// gathered listing ends at once.
func (r *corpusReadModel) ListSessions(req *memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error) {
	if req.GetUserId() != "" {
		return r.listSessionsIn(context.Background(), r.corpusRoute(req.GetUserId()), req)
	}
	pages := make([][]*memoryv1.SessionIndexEntry, r.parts)
	nexts := make([]string, r.parts)
	if err := r.gather(func(c int) (err error) {
		pages[c], nexts[c], err = r.listSessionsIn(context.Background(), route{part: c}, req)
		return err
	}); err != nil {
		return nil, "", err
	}
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = projections.DefaultListLimit
	}
	type keyed struct {
		key []byte
		e   *memoryv1.SessionIndexEntry
	}
	var all []keyed
	more := false
	for c, page := range pages {
		for _, e := range page {
			all = append(all, keyed{projections.SessionListKey(req, e), e})
		}
		more = more || nexts[c] != ""
	}
	slices.SortFunc(all, func(a, b keyed) int { return bytes.Compare(a.key, b.key) })
	out := make([]*memoryv1.SessionIndexEntry, 0, min(len(all), limit))
	for _, k := range all[:min(len(all), limit)] {
		out = append(out, k.e)
	}
	// A page is followed by another when sessions are left over, or a
	// partition's (full) page is followed by more of its own.
	var next string
	if len(all) > limit || (len(all) == limit && more) {
		next = base64.RawURLEncoding.EncodeToString(all[limit-1].key)
	}
	return out, next, nil
}

// listSessionsIn is one partition's page.
func (r *corpusReadModel) listSessionsIn(ctx context.Context, rt route, req *memoryv1.ListSessionsRequest) (es []*memoryv1.SessionIndexEntry, next string, err error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, "", err
	}
	err = r.do(ctx, rt, corpusCall{Method: mListSessions, Req: b},
		func(rm readModel) error { es, next, err = rm.ListSessions(req); return err },
		func(rep *corpusReply) error {
			next = rep.Next
			es, err = getMsgs(rep.Msgs, func() *memoryv1.SessionIndexEntry { return new(memoryv1.SessionIndexEntry) })
			return err
		})
	return es, next, err
}

// CountSessions counts the sessions of agentID (every partition's, one
// after the other until limit) or of userID (the user's partition),
// stopping at limit.
func (r *corpusReadModel) CountSessions(userID, agentID string, limit int) (int, error) {
	if agentID == "" {
		return r.countSessionsIn(r.corpusRoute(userID), userID, agentID, limit)
	}
	total := 0
	for c := range r.parts {
		if total >= limit {
			break
		}
		n, err := r.countSessionsIn(route{part: c}, userID, agentID, limit-total)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return min(total, max(limit, 0)), nil
}

func (r *corpusReadModel) countSessionsIn(rt route, userID, agentID string, limit int) (n int, err error) {
	err = r.do(context.Background(), rt, corpusCall{Method: mCountSessions, ID: userID, Kind: agentID, Limit: limit},
		func(rm readModel) error { n, err = rm.CountSessions(userID, agentID, limit); return err },
		func(rep *corpusReply) error { n = int(rep.I64); return nil })
	return n, err
}

// EntriesWithMetadata lists the entries carrying metadata name = value,
// of every partition, in the order of a store of the whole log (scope log
// kind, scope id, key).
func (r *corpusReadModel) EntriesWithMetadata(name, value string) ([]erasure.EntryRef, error) {
	got := make([][]erasure.EntryRef, r.parts)
	if err := r.gather(func(c int) error {
		return r.do(context.Background(), route{part: c}, corpusCall{Method: mEntriesWithMeta, Key: name, Query: value},
			func(rm readModel) (err error) { got[c], err = rm.EntriesWithMetadata(name, value); return err },
			func(rep *corpusReply) error { got[c] = rep.Refs; return nil })
	}); err != nil {
		return nil, err
	}
	out := make([]erasure.EntryRef, 0)
	for _, refs := range got {
		out = append(out, refs...)
	}
	slices.SortStableFunc(out, func(a, b erasure.EntryRef) int {
		return cmp.Or(
			cmp.Compare(projections.ScopeLogKind(a.Kind), projections.ScopeLogKind(b.Kind)),
			cmp.Compare(a.ID, b.ID),
			cmp.Compare(a.Key, b.Key))
	})
	return out, nil
}
