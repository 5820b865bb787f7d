package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// readModel serves the API's queries from the projection: waits from the
// projector, reads from the store, errors mapped to API codes.
type readModel struct {
	p *projections.Projector
	s *projections.Store
	// q embeds search queries (nil: BM25 only); logger reports its failures.
	q      queryEmbedder
	logger *slog.Logger
	// marks, with the log in partitions, are the partitions' known last
	// sequences that waits are bounded by (partitions.go); nil with the
	// log in one stream.
	marks *partitionMarks
}

// queryEmbedder is what search needs of internal/embed.Client.
type queryEmbedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

var (
	_ api.ReadModel          = readModel{}
	_ consistency.Projection = readModel{}
)

func mapErr(err error) error {
	var (
		nf  *projections.NotFoundError
		arg *projections.ArgumentError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return &api.Error{Code: 404, Field: "message_ids", Message: "message " + nf.ID + " is not in this session's swap"}
	case errors.As(err, &arg):
		return &api.Error{Code: 400, Field: arg.Field, Message: arg.Reason}
	case errors.Is(err, projections.ErrClosed):
		return &api.Error{Code: 503, Message: err.Error()}
	}
	return err
}

// WaitFor waits until the projection applied seq. With the log in
// partitions seq names no partition: it waits until each partition
// applied seq or its mark, whichever is lower (partitionMarks).
func (r readModel) WaitFor(ctx context.Context, seq uint64) error {
	if r.marks != nil {
		return r.p.WaitForAll(ctx, r.marks.targets(seq))
	}
	return r.p.WaitFor(ctx, seq)
}

// WaitForAll implements erasure.PartitionsWaiter: it returns once each
// partition i applied ends[i].
func (r readModel) WaitForAll(ctx context.Context, ends []uint64) error {
	return r.p.WaitForAll(ctx, ends)
}

// AppliedSeqOf is partition part's checkpoint (consistency.Projection).
func (r readModel) AppliedSeqOf(part int) uint64 { return r.p.AppliedSeqOf(part) }

// LogEndOf is at least the last sequence partition part's stream stored:
// its mark when that is seq or more (no round trip: the read of a write
// this node made or knew of at start), else the stream's last.
func (r readModel) LogEndOf(ctx context.Context, part int, seq uint64) (uint64, error) {
	if r.marks == nil {
		return r.LogEnd(ctx)
	}
	if m := r.marks.get(part); m >= seq {
		return m, nil
	}
	lasts, err := r.p.LogLasts(ctx)
	if err != nil || part >= len(lasts) {
		return 0, cmp.Or(err, fmt.Errorf("node: no partition %d", part))
	}
	return max(lasts[part], r.marks.get(part)), nil
}

// AppliedSeq is the projection's checkpoint; with the log in partitions
// the least of theirs (a sequence at or below it is applied in any
// partition).
func (r readModel) AppliedSeq() uint64 { return r.p.AppliedSeq() }

// LogEnd is at least the last sequence the log stored: what the projector
// had yet to apply plus what it applied since (read after the lag, so a
// projector moving on meanwhile only makes it larger). With the log in
// partitions, the highest of the partitions' last sequences.
func (r readModel) LogEnd(ctx context.Context) (uint64, error) {
	if r.marks != nil {
		lasts, err := r.p.LogLasts(ctx)
		return max(slices.Max(lasts), r.marks.highest()), err
	}
	lag, err := r.p.Lag(ctx)
	return r.p.AppliedSeq() + lag, err
}

func (r readModel) Session(id string) (*memoryv1.SessionIndexEntry, bool, error) {
	e, ok, err := r.s.Session(id)
	return e, ok, mapErr(err)
}

func (r readModel) Recall(id string, offset, limit int) ([]*memoryv1.Message, uint64, error) {
	m, n, err := r.s.Recall(id, offset, limit)
	return m, n, mapErr(err)
}

func (r readModel) RecallSummaries(id string, offset, limit int) ([]*memoryv1.Summary, uint64, error) {
	m, n, err := r.s.RecallSummaries(id, offset, limit)
	return m, n, mapErr(err)
}

// SummaryAt reads an archived summary for a context's recalled item.
func (r readModel) SummaryAt(id, summaryID string) (*memoryv1.Summary, bool) {
	return r.s.SummaryAt(id, summaryID)
}

// MessageAt reads a message of a session for a context's recalled item.
func (r readModel) MessageAt(id string, seq uint64) (*memoryv1.Message, bool) {
	return r.s.MessageAt(id, seq)
}

// SearchUser searches every session of user ("" : every session without a
// user) but except, ranked as Search ranks with the query expanded once by
// its best hits' rarest terms and each question among the best hits
// followed by its reply, the hits filled up to limit with the user's
// other messages (projections.Corpus).
func (r readModel) SearchUser(user, except, q string, limit int) ([]*memoryv1.SearchHit, error) {
	h, err := r.s.SearchWith("", memoryv1.SearchScope_SEARCH_SCOPE_USER, q, limit, projections.SearchOptions{Corpus: &projections.Corpus{
		User: user, Fill: true, Except: except, Feedback: true, Replies: true,
	}})
	return h, mapErr(err)
}

func (r readModel) MessagesByID(id string, ids []string) ([]*memoryv1.Message, error) {
	m, err := r.s.MessagesByID(id, ids)
	return m, mapErr(err)
}

// Search embeds the query first when embeddings are on (outside any
// transaction, bounded by ctx and the client's timeout); if that fails it
// searches by BM25 alone, logging why. With summaries, the session's
// archived summaries that match are ranked with the messages by score
// (projections.MergeHits), within limit.
func (r readModel) Search(ctx context.Context, id string, scope memoryv1.SearchScope, q string, limit int, summaries bool) ([]*memoryv1.SearchHit, error) {
	var opts projections.SearchOptions
	if r.q != nil && strings.TrimSpace(q) != "" {
		vecs, err := r.q.Embed(ctx, []string{q})
		switch {
		case err != nil:
			r.logger.Warn("query embedding failed; searching by BM25 alone", "session", id, "err", err)
		case len(vecs) == 1:
			opts.QueryVector = vecs[0]
		}
	}
	h, err := r.s.SearchWith(id, scope, q, limit, opts)
	if err != nil || !summaries {
		return h, mapErr(err)
	}
	sums, err := r.s.SearchSummaries(id, q, min(limit, segmented.SummariesSearched))
	return projections.MergeHits(h, sums, limit), mapErr(err)
}

func (r readModel) ListSessions(req *memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error) {
	e, next, err := r.s.ListSessions(req)
	return e, next, mapErr(err)
}

var (
	_ api.EntrySearcher = readModel{}
	_ erasure.ReadModel = readModel{}
)

// SearchEntries ranks one scope's entries (the API waited for min_seq).
func (r readModel) SearchEntries(aggKind, id string, req *memoryv1.SearchEntriesRequest) ([]*memoryv1.EntryHit, error) {
	hits, err := r.s.SearchEntries(aggKind, id, req)
	return hits, mapErr(err)
}

// TopEntries returns a scope's entries by importance and recency.
func (r readModel) TopEntries(aggKind, id string, limit int) ([]*memoryv1.Entry, error) {
	e, err := r.s.TopEntries(aggKind, id, limit)
	return e, mapErr(err)
}

// DataOwnedBy lists owner's large data ids.
func (r readModel) DataOwnedBy(owner string) ([]string, error) {
	ids, err := r.s.DataOwnedBy(owner)
	return ids, mapErr(err)
}

// EntriesWithPrefix lists a scope's live entries whose key starts with
// prefix (pattern libraries).
func (r readModel) EntriesWithPrefix(aggKind, id, prefix string, limit int) ([]*memoryv1.Entry, error) {
	es, err := r.s.EntriesWithPrefix(aggKind, id, prefix, limit)
	return es, mapErr(err)
}

// EntryText reads an entry version's text for a context's memory item.
func (r readModel) EntryText(scope, key string, version uint64) (string, bool) {
	return r.s.EntryText(scope, key, version)
}

// EntryKey reads the key a context's memory item names by digest.
func (r readModel) EntryKey(scope string, sum []byte) (string, bool) {
	return r.s.EntryKey(scope, sum)
}

// EntriesWithMetadata lists the entries carrying metadata name = value.
func (r readModel) EntriesWithMetadata(name, value string) ([]erasure.EntryRef, error) {
	refs, err := r.s.EntriesWithMetadata(name, value)
	out := make([]erasure.EntryRef, len(refs))
	for i, e := range refs {
		out[i] = erasure.EntryRef{Kind: e.Kind, ID: e.ID, Key: e.Key}
	}
	return out, mapErr(err)
}

// commandIndex serves the actors' command index from the projection.
type commandIndex struct {
	p *projections.Projector
	s *projections.Store
}

var _ actors.CommandIndex = commandIndex{}

// LookupCommand waits until the projection applied covered, a sequence of
// the aggregate's own stream (its log partition's: the others' checkpoints
// say nothing about it, and an empty partition's never moves), then reads
// the command from the store.
func (c commandIndex) LookupCommand(ctx context.Context, kind, id, key string, covered uint64) (*memoryv1.CommandResult, bool, error) {
	if err := c.p.WaitForIn(ctx, events.LogPartition(id, c.p.Partitions()), covered); err != nil {
		return nil, false, err
	}
	return c.s.LookupCommand(kind, id, key)
}

func (r readModel) CountSessions(userID, agentID string, limit int) (int, error) {
	n, err := r.s.CountSessions(userID, agentID, limit)
	return n, mapErr(err)
}

func (r readModel) DataBytes(owner string) (int64, error) {
	n, err := r.s.DataBytes(owner)
	return n, mapErr(err)
}
