package api

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/api/limits"
	"github.com/agentmem/agentmem/api/rerank"
	"github.com/agentmem/agentmem/consolidation"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// ReadModel is what the query endpoints need of the projection.
type ReadModel interface {
	// WaitFor returns once the projection applied stream sequence seq, or an
	// error when ctx ends first.
	WaitFor(ctx context.Context, seq uint64) error
	AppliedSeq() uint64
	Session(id string) (*memoryv1.SessionIndexEntry, bool, error)
	Recall(sessionID string, offset, limit int) ([]*memoryv1.Message, uint64, error)
	// RecallSummaries pages the session's archived L2 summaries; SummaryAt
	// reads one (a context's recalled summary), ok false when it is gone.
	RecallSummaries(sessionID string, offset, limit int) ([]*memoryv1.Summary, uint64, error)
	SummaryAt(sessionID, id string) (*memoryv1.Summary, bool)
	MessagesByID(sessionID string, ids []string) ([]*memoryv1.Message, error)
	// MessageAt reads message seq of a session (a context's recalled item of
	// another session); ok false when it is gone.
	MessageAt(sessionID string, seq uint64) (*memoryv1.Message, bool)
	// SearchUser searches every session of user ("" : every session
	// without a user), ranked as Search ranks, whether or not the
	// projection knows the session asking yet; for a user, the hits are
	// filled up to limit with the user's messages of sessions other than
	// except that the query did not match (newest first, below every hit).
	SearchUser(user, except, query string, limit int) ([]*memoryv1.SearchHit, error)
	// Search may call an embeddings endpoint for the query (bounded by
	// ctx) before it reads the projection; summaries adds the session's
	// archived summaries to the hits (one ranking by score).
	Search(ctx context.Context, sessionID string, scope memoryv1.SearchScope, query string, limit int, summaries bool) ([]*memoryv1.SearchHit, error)
	ListSessions(req *memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error)
	// CountSessions counts the sessions of agentID (or of userID when
	// agentID is empty), stopping at limit.
	CountSessions(userID, agentID string, limit int) (int, error)
	// DataBytes is the sum of the sizes of owner's large data held (stored,
	// not expired), as the projection has applied it.
	DataBytes(owner string) (int64, error)
	// DataOwnedBy lists the ids of owner's large data the projection holds.
	DataOwnedBy(owner string) ([]string, error)
}

// Reranker reorders search hits (optional; package rerank).
type Reranker = rerank.Reranker

// queryEndpoint is served beside the subscription: it may wait for the
// projection (min_seq), so it runs in its own goroutine, at most
// Config.MaxConcurrentQueries at a time (503 when all are busy).
type queryEndpoint struct {
	op     string
	newReq func() proto.Message
	serve  queryFunc
}

// queryFunc serves a session query once its body is read.
type queryFunc = func(s *Service, ctx context.Context, c *call, id string, req proto.Message, reply actors.ReplyFunc)

func (s *Service) queryHandler(ep queryEndpoint) func(*call) {
	return func(c *call) {
		asJSON, rp := c.asJSON, c.rp
		id, err := c.subj.SessionID()
		if err != nil {
			respondError(rp, asJSON, Classify(err))
			return
		}
		req := ep.newReq()
		if !s.readBody(c, req) {
			return
		}
		timeout := s.cfg.QueryTimeout
		if ep.op == "consolidate" { // many writes: bounded like a background consolidation
			timeout = consolidation.DefaultConfig().Timeout
		}
		s.goQueryFor(c, timeout, func(ctx context.Context, reply actors.ReplyFunc) { ep.serve(s, ctx, c, id, req, reply) })
	}
}

// goQuery runs fn in a goroutine once the caller's access is checked
// (authorized), bounded first by the caller's own slots
// (429 max_concurrent_queries: a slow min_seq wait holds only the caller's
// slots), then by the node's (503 when every slot of the node is busy).
func (s *Service) goQuery(c *call, fn func(context.Context, actors.ReplyFunc)) {
	s.goQueryFor(c, s.cfg.QueryTimeout, fn)
}

// goQueryFor is goQuery bounded by timeout instead of QueryTimeout.
func (s *Service) goQueryFor(c *call, timeout time.Duration, fn func(context.Context, actors.ReplyFunc)) {
	release, ok := hold(c, s.querySlots, s.queries, "queries")
	if !ok {
		return
	}
	rp, asJSON := c.rp, c.asJSON
	if !s.begin(rp, asJSON) {
		release()
		return
	}
	s.workers.Go(func() {
		defer release()
		ctx, cancel := context.WithTimeout(s.ctx, timeout)
		defer cancel()
		reply := s.answer(rp, asJSON)
		if err := s.authorized(ctx, c); err != nil {
			reply(nil, err)
			return
		}
		fn(ctx, reply)
	})
}

// readable waits for min_seq and consistency, checks the session is in the projection and
// that c's caller may reach it as the operation declares (checkSessionIndex;
// write: the query changes it, as promote does), and returns its index
// entry.
func (s *Service) readable(ctx context.Context, c *call, id string, req readAfter) (*memoryv1.SessionIndexEntry, error) {
	if s.rm == nil {
		return nil, &Error{Code: 503, Field: "", Message: "no projection on this node"}
	}
	if req.GetMinSeq() == 0 && req.GetConsistency() == "" {
		// Without min_seq a query still reads the session's own writes:
		// it waits (bounded) for the session's last command served here,
		// so a client that never heard of min_seq searches what it just
		// appended.
		s.awaitSeq(ctx, s.sessionSeqs.Get(id).Last)
	} else if err := s.waitRead(ctx, req); err != nil {
		return nil, err
	}
	e, ok, err := s.rm.Session(id)
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, &Error{Code: 404, Field: "session_id", Message: "session does not exist (or is not projected yet: pass consistency or min_seq)"}
	}
	if err := c.who.Session(id, e.GetUserId(), e.GetAgentId(), c.route.op.access.write); err != nil {
		s.metrics.Denied.WithLabelValues("session").Inc()
		return nil, err
	}
	return e, nil
}

// logEnder is a read model that knows the last sequence the log stored.
type logEnder interface {
	LogEnd(ctx context.Context) (uint64, error)
}

// readAfter is what a read waits for: min_seq, a consistency token list.
type readAfter interface {
	GetMinSeq() uint64
	GetConsistency() string
}

// waitRead waits for r's min_seq, then for each partition its consistency
// names (with the log in one stream, as for min_seq).
func (s *Service) waitRead(ctx context.Context, r readAfter) error {
	if err := s.waitMinSeq(ctx, r.GetMinSeq(), "min_seq"); err != nil || r.GetConsistency() == "" {
		return err
	}
	set, err := consistency.Parse(r.GetConsistency(), s.cfg.LogPartitions)
	if err != nil {
		return err
	} else if set.K == 1 {
		return s.waitMinSeq(ctx, set.Seqs[0], consistency.Field)
	}
	p, _ := s.rm.(consistency.Projection)
	return consistency.Wait(ctx, p, set, s.cfg.MinSeqWait)
}

// waitMinSeq waits, at most MinSeqWait, until the projection applied
// minSeq (read from field). A min_seq beyond the last sequence the log
// stored is no write's (a reply's result.seq is always stored): 400, at
// once.
func (s *Service) waitMinSeq(ctx context.Context, minSeq uint64, field string) error {
	if minSeq == 0 || s.rm.AppliedSeq() >= minSeq {
		return nil
	}
	// Asking the log for its end costs a round trip: only for a min_seq
	// beyond every write this node answered (a read after another node's
	// write, or a bogus value).
	if le, ok := s.rm.(logEnder); ok && minSeq > s.acked.load() {
		if end, err := le.LogEnd(ctx); err == nil && minSeq > end {
			return &Error{Code: 400, Field: field, Message: fmt.Sprintf("%d is beyond the log's last sequence (%d): pass the result.seq of a reply", minSeq, end)}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.MinSeqWait)
	defer cancel()
	if err := s.rm.WaitFor(wctx, minSeq); err != nil {
		return &Error{Code: 503, Field: field, Message: fmt.Sprintf("projection has applied %d, not yet %d (waited %s); retry", s.rm.AppliedSeq(), minSeq, s.cfg.MinSeqWait)}
	}
	return nil
}

func (s *Service) recall(ctx context.Context, c *call, id string, m proto.Message, reply actors.ReplyFunc) {
	req := m.(*memoryv1.RecallRequest)
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = 20
	}
	if limit > limits.MaxRecallLimit {
		reply(nil, &Error{Code: 400, Field: "limit", Message: fmt.Sprintf("%d, at most %d", limit, limits.MaxRecallLimit)})
		return
	}
	if _, err := s.readable(ctx, c, id, req); err != nil {
		reply(nil, err)
		return
	}
	out := &memoryv1.RecallReply{AppliedSeq: s.rm.AppliedSeq()}
	var err error
	switch req.GetKind() {
	case "", "messages":
		out.Messages, out.Total, err = s.rm.Recall(id, int(req.GetOffset()), limit)
	case "summaries":
		out.Summaries, out.Total, err = s.rm.RecallSummaries(id, int(req.GetOffset()), limit)
	default:
		err = &Error{Code: 400, Field: "kind", Message: `must be "messages" or "summaries"`}
	}
	if err != nil {
		reply(nil, err)
		return
	}
	reply(out, nil)
}

func (s *Service) search(ctx context.Context, c *call, id string, m proto.Message, reply actors.ReplyFunc) {
	req := m.(*memoryv1.SearchRequest)
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = 10
	}
	if err := limits.CheckSearch(uint32(limit), req.GetQuery()); err != nil {
		reply(nil, err)
		return
	}
	switch {
	case req.GetScope() > memoryv1.SearchScope_SEARCH_SCOPE_USER:
		reply(nil, &Error{Code: 400, Field: "scope", Message: "must be SESSION or USER"})
		return
	}
	e, err := s.readable(ctx, c, id, req)
	if err != nil {
		reply(nil, err)
		return
	}
	// USER scope reads every session of the session's user: the caller
	// must reach that user, not only this session (through its agent).
	if req.GetScope() == memoryv1.SearchScope_SEARCH_SCOPE_USER && e.GetUserId() != "" {
		if err := c.who.Scope("user", e.GetUserId(), false); err != nil {
			s.metrics.Denied.WithLabelValues("scope").Inc()
			reply(nil, err)
			return
		}
	}
	applied := s.rm.AppliedSeq()
	hits, err := s.rm.Search(ctx, id, req.GetScope(), req.GetQuery(), limit, req.GetIncludeSummaries())
	if err != nil {
		reply(nil, err)
		return
	}
	out := &memoryv1.SearchReply{Hits: hits, AppliedSeq: applied}
	if s.rerank != nil && len(hits) > 1 {
		out.Hits, out.Reranked = rerank.Hits(ctx, s.rerank, s.cfg.RerankTimeout, s.logger, req.GetQuery(), hits)
	}
	reply(out, nil)
}

func (s *Service) promote(ctx context.Context, c *call, id string, m proto.Message, reply actors.ReplyFunc) {
	req := m.(*memoryv1.PromoteRequest)
	if len(req.GetMessageIds()) == 0 {
		reply(nil, &Error{Code: 400, Field: "message_ids", Message: "required"})
		return
	}
	for i, mid := range req.GetMessageIds() {
		if err := events.ValidateID(fmt.Sprintf("message_ids[%d]", i), mid); err != nil {
			reply(nil, err)
			return
		}
	}
	if _, err := s.readable(ctx, c, id, req); err != nil {
		reply(nil, err)
		return
	}
	msgs, err := s.rm.MessagesByID(id, req.GetMessageIds())
	if err != nil {
		reply(nil, err)
		return
	}
	s.dispatch(id, c.who, &actors.Promote{Request: req, Messages: msgs}, s.tokened(id, reply))
}

func (s *Service) clearRecalled(_ context.Context, c *call, id string, m proto.Message, reply actors.ReplyFunc) {
	s.dispatch(id, c.who, m, s.tokened(id, reply))
}

func (s *Service) dispatch(id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) {
	if err := s.d.Dispatch(id, who, body, reply); err != nil {
		reply(nil, err)
	}
}

// listSessions serves mem.v1.sessions.list from the sessions index.
func (s *Service) listSessions(c *call) {
	req := &memoryv1.ListSessionsRequest{}
	if !s.readBody(c, req) {
		return
	}
	if err := c.who.ListSessions(req.GetUserId(), req.GetAgentId()); err != nil {
		s.metrics.Denied.WithLabelValues("sessions_list").Inc()
		c.fail(err)
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		if s.rm == nil {
			reply(nil, &Error{Code: 503, Message: "no projection on this node"})
			return
		}
		if err := s.waitRead(ctx, req); err != nil {
			reply(nil, err)
			return
		}
		applied := s.rm.AppliedSeq()
		entries, next, err := s.rm.ListSessions(req)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(&memoryv1.ListSessionsReply{Sessions: entries, NextPageToken: next, AppliedSeq: applied}, nil)
	})
}

// EntrySearcher ranks a scope's entries by BM25 (the projection); optional.
type EntrySearcher interface {
	SearchEntries(aggregateKind, id string, req *memoryv1.SearchEntriesRequest) ([]*memoryv1.EntryHit, error)
	// TopEntries returns a scope's live entries by importance, then the
	// most recently updated (projections.Store.TopEntries).
	TopEntries(aggregateKind, id string, limit int) ([]*memoryv1.Entry, error)
	// EntryText is the text of an entry version a context's memory item
	// names (segmented.EntryText), EntryKey the key it names by digest
	// (segmented.KeyOf; projections.Store).
	EntryText(scope, key string, version uint64) (string, bool)
	EntryKey(scope string, sum []byte) (string, bool)
}

// entrySearchHandler serves mem.v1.agent.<id>.search and
// mem.v1.scope.<kind>.<id>.search from the projection.
func (s *Service) entrySearchHandler(c *call) {
	asJSON, rp := c.asJSON, c.rp
	t, err := c.scope()
	if err != nil {
		respondError(rp, asJSON, Classify(err))
		return
	}
	req := &memoryv1.SearchEntriesRequest{}
	if !s.readBody(c, req) {
		return
	}
	if err := limits.CheckSearch(req.GetLimit(), req.GetQuery()); err != nil {
		respondError(rp, asJSON, err)
		return
	}
	s.goQuery(c, func(ctx context.Context, reply actors.ReplyFunc) {
		if s.entries == nil || s.rm == nil {
			reply(nil, &Error{Code: 503, Message: "entry search needs the projector on this node"})
			return
		}
		if req.GetMinSeq() == 0 && req.GetConsistency() == "" {
			s.awaitOwnWrite(ctx, c.who) // the caller's own last write, as a session query does
		} else if err := s.waitRead(ctx, req); err != nil {
			reply(nil, err)
			return
		}
		applied := s.rm.AppliedSeq()
		hits, err := s.entries.SearchEntries(actors.AggregateKind(t.kind), t.id, req)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(&memoryv1.SearchEntriesReply{Hits: hits, AppliedSeq: applied}, nil)
	})
}
