package api

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/api/limits"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/internal/utf8cut"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
	"google.golang.org/protobuf/proto"
)

// The node's half of the context assembler: when an append
// holds a user message and the session assembles its context, the node
// searches, outside the actor, the session's swap and the scopes the
// caller may read for that message and hands the candidates to the
// session actor with the append. The actor chooses and records the
// sections (segmented.DecideAppendWith).
const (
	// OwnWriteWait bounds how long the memory search of an append waits
	// for the projection to apply the caller's last scope write.
	OwnWriteWait = 500 * time.Millisecond
	// memoryMatches and memoryTop: per scope, the entries matching the
	// message (BM25) and the most important / recent ones besides.
	memoryMatches = 5
	memoryTop     = 3
	// maxCandidateValueBytes bounds an entry value handed to the actor (it
	// trims to the section's room anyway).
	maxCandidateValueBytes = 4 << 10
	// replyFlushWait bounds how long an append's searches wait for its
	// answer to leave (Request.Flush) before they start anyway.
	replyFlushWait = 100 * time.Millisecond
)

// appendWithSearch serves an append that needs work outside the actor
// first: storing large tool results (offload) and finding the context
// assembler's candidates for its latest user message q ("" = none).
// flush (Request.Flush; nil: none) tells when the append's answer has left.
func (s *Service) appendWithSearch(ctx context.Context, who *tenancy.Caller, id string, req *memoryv1.AppendRequest, offload bool, q string, flush func(context.Context) error, reply actors.ReplyFunc) {
	if offload {
		// Check before storing bytes on the session's behalf.
		if err := s.checkSession(ctx, who, id, true); err != nil {
			reply(nil, err)
			return
		}
		var err error
		if req, err = s.offload(ctx, id, req); err != nil {
			reply(nil, err)
			return
		}
	}
	if q == "" || s.rm == nil {
		s.dispatch(id, who, &actors.Append{Request: req}, reply)
		return
	}
	// The append is stored and answered first; its sections are searched
	// after and sent in an Assemble, which the session awaits before it
	// serves anything else (actors.Later).
	first := s.sessionSeqs.Get(id).N <= 1
	later := &actors.Later{}
	s.dispatch(id, who, &actors.Append{Request: req, Later: later}, func(m proto.Message, err error) {
		if err != nil || later.MessageID == "" {
			reply(m, err)
			return
		}
		// The searches wait for the projection of everything before the
		// append (its own batch aside).
		before := m.(*memoryv1.AppendReply).GetResult().GetSeq() - 1
		msg, key := later.MessageID, later.Key
		reply(m, err)
		s.workers.Go(func() {
			// The searches start once the answer has left: started
			// before, their CPU kept it from the client for a millisecond
			// at the median and ten at the 99th percentile on two cores
			// (the goroutines that carry it out found no free core).
			if flush != nil {
				fctx, cancel := context.WithTimeout(s.ctx, replyFlushWait)
				_ = flush(fctx) // late or failed: search anyway, the session waits
				cancel()
			}
			s.assembleLater(who, id, q, first, msg, key, before, maxCandidateSearches)
		})
	})
}

// assembleLater searches the candidates of user message msg (its text q)
// for key and sends them to the session, which awaits them; a session
// whose key changed meanwhile answers with its own, and the search runs
// again (at most searches times in all). Failures are logged and counted:
// the session stops awaiting after its assembly wait.
func (s *Service) assembleLater(who *tenancy.Caller, id, q string, first bool, msg string, key segmented.CandidateKey, before uint64, searches int) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.QueryTimeout)
	defer cancel()
	// One of the node's query slots, waited for (the append is stored and
	// answered; its session waits for these sections, at most its
	// assembly wait): a burst of user messages queues here instead of
	// running every search at once.
	select {
	case s.queries <- struct{}{}:
		defer func() { <-s.queries }()
	case <-ctx.Done():
		s.metrics.AssemblyErrors.WithLabelValues("assemble").Inc()
		s.logger.Warn("context assembler: no query slot for the sections of an append in time", "session", id, "message", msg)
		return
	}
	c := s.candidates(ctx, who, id, key, q, first, before)
	s.dispatch(id, who, &actors.Assemble{MessageID: msg, Candidates: c, Key: key}, func(_ proto.Message, err error) {
		var need *actors.NeedCandidates
		switch {
		case err == nil:
		case errors.As(err, &need) && searches > 1:
			s.workers.Go(func() { s.assembleLater(who, id, q, first, msg, need.Key, before, searches-1) })
		default:
			s.metrics.AssemblyErrors.WithLabelValues("assemble").Inc()
			s.logger.Warn("context assembler: the sections searched after an append were not decided", "session", id, "message", msg, "err", err)
		}
	})
}

// maxCandidateSearches bounds the searches of one append whose session's
// settings keep changing under it (each change is one compression or one
// re-creation of the session: in practice one search, two at most).
const maxCandidateSearches = 4

// latestUserText returns the content of req's last user message ("" when
// it has none), cut to limits.MaxQueryBytes at a rune boundary.
func latestUserText(req *memoryv1.AppendRequest) string {
	var q string
	for _, m := range req.GetMessages() {
		if m.GetRole() == memoryv1.Role_ROLE_USER {
			q = m.GetContent()
		}
	}
	return utf8cut.Prefix(q, limits.MaxQueryBytes)
}

// candidates searches for the assembler. A failed search is logged and
// counted (agentmem_api_assembly_errors_total) and its part left empty:
// the append is stored either way, and its event records what was chosen.
// The searches (the session's swap, its earlier sessions, the memory
// scopes) run one after the other, each after its own bounded wait.
//
// first: the append is the session's first command after its create;
// before: the stream sequence the session's own search waits for (the
// one before the append's).
func (s *Service) candidates(ctx context.Context, who *tenancy.Caller, id string, k segmented.CandidateKey, q string, first bool, before uint64) *segmented.Candidates {
	c := &segmented.Candidates{}
	var own, others []*memoryv1.SearchHit
	// One after the other: the append was answered already, and the
	// searches on one core leave the other to the node's replies (run
	// together, they kept a just-answered append's reply from the client
	// for milliseconds on two cores).
	if k.Recall {
		own = s.swapHits(ctx, id, q, k.Summaries, before)
	}
	if k.Cross {
		others = s.crossHits(ctx, who, id, k, q, first)
	}
	if k.Memory && s.entries != nil {
		s.awaitOwnWrite(ctx, who)
		c.Memory, c.MemoryScores = s.memoryCandidates(who, id, k, q)
	}
	if k.Memory && s.entries != nil {
		s.metrics.Candidates.WithLabelValues("memory").Observe(float64(len(c.Memory)))
	}
	if k.Recall || k.Cross {
		// One ranking: the scores are comparable, both searches rank
		// against the statistics of the user's corpus.
		hits := append(own, others...)
		slices.SortStableFunc(hits, func(a, b *memoryv1.SearchHit) int { return cmp.Compare(b.GetScore(), a.GetScore()) })
		c.OfferHits(id, hits, k.Depth)
		s.metrics.Candidates.WithLabelValues("recall").Observe(float64(len(c.Recall)))
	}
	// Rendered and counted here, once per source through s.prepared, not
	// on the session actor's goroutine at each user message (the actors
	// count with this same tokenizer; with another they count again).
	if tok, err := segmented.NewTokenizer(); err == nil {
		c.Prepare(id, tok, &s.prepared)
	}
	return c
}

// swapHits searches the session's own messages (the assembler asks only
// once the session has compressed: before, every message is verbatim in
// L1). It first waits (bounded) for the projection to apply stream
// sequence before (all the session wrote before the append the search is
// for: the actor counts only hits from before it, segmented.DecideAssemble),
// so the same requests give the same context. summaries adds the
// session's archived summaries that match.
func (s *Service) swapHits(ctx context.Context, id, q string, summaries bool, before uint64) []*memoryv1.SearchHit {
	s.awaitSeq(ctx, before)
	hits, err := s.rm.Search(ctx, id, memoryv1.SearchScope_SEARCH_SCOPE_SESSION, q, segmented.RecallSearched, summaries)
	if err != nil {
		s.metrics.AssemblyErrors.WithLabelValues("recall").Inc()
		s.logger.Warn("context assembler: swap search failed; appending without recall", "session", id, "err", err)
	}
	return hits
}

// crossHits searches the session's earlier sessions (earlierSessionHits),
// at the session's first message after waiting (bounded) for the caller's
// own recent writes to its other sessions. Hits of the session itself are
// dropped (the swap search's).
func (s *Service) crossHits(ctx context.Context, who *tenancy.Caller, id string, k segmented.CandidateKey, q string, first bool) []*memoryv1.SearchHit {
	if first {
		// A session's first message (its create is its only command):
		// what its caller just wrote elsewhere (a sitting it ended) is
		// its history. Later messages do not wait for other sessions.
		s.awaitSeq(ctx, s.recent.Others(who, id))
	}
	hits, err := s.earlierSessionHits(ctx, who, id, k, q)
	if err != nil {
		s.metrics.AssemblyErrors.WithLabelValues("cross_session").Inc()
		s.logger.Warn("context assembler: earlier sessions' search failed; appending without them", "session", id, "err", err)
	}
	return slices.DeleteFunc(hits, func(h *memoryv1.SearchHit) bool { return h.GetSessionId() == id })
}

// earlierSessionHits searches the messages of the sessions of k.User (or,
// without a user, of k.Agent's sessions without a user) for q, keeping
// only what who may read, checked as a direct read of each session is
// (tenancy.Caller.Session against the session's user and agent), and for a
// user's sessions the user as USER-scope search checks it. A session never
// reaches another user's sessions through a shared agent: the user's own
// corpus is searched, and each hit's session must have that user.
func (s *Service) earlierSessionHits(ctx context.Context, who *tenancy.Caller, id string, k segmented.CandidateKey, q string) ([]*memoryv1.SearchHit, error) {
	var (
		hits []*memoryv1.SearchHit
		err  error
		// The search leaves the session out when ranking, so k.Depth
		// hits are k.Depth of the other sessions'.
		depth = min(k.Depth, segmented.MaxEarlierCandidates)
	)
	switch {
	case k.User != "":
		if who.Scope("user", k.User, false) != nil {
			return nil, nil
		}
		hits, err = s.rm.SearchUser(k.User, id, q, depth)
	case k.Agent != "":
		hits, err = s.rm.SearchUser("", id, q, depth)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	readable := map[string]bool{id: true}
	return slices.DeleteFunc(hits, func(h *memoryv1.SearchHit) bool {
		sid := h.GetSessionId()
		ok, seen := readable[sid]
		if !seen {
			ok = s.mayRecallFrom(who, sid, k)
			readable[sid] = ok
		}
		return !ok
	}), nil
}

// mayRecallFrom reports whether session sid (another session than the
// assembling one, whose key is k) may be recalled from: it has k's user
// (or, without a user, no user and k's agent) and who may read it.
func (s *Service) mayRecallFrom(who *tenancy.Caller, sid string, k segmented.CandidateKey) bool {
	e, ok, err := s.rm.Session(sid)
	if err != nil || !ok || e.GetUserId() != k.User || (k.User == "" && e.GetAgentId() != k.Agent) {
		return false
	}
	return who.Admin() || who.Session(sid, e.GetUserId(), e.GetAgentId(), false) == nil
}

// awaitSeq waits, at most OwnWriteWait, until the projection applied seq.
func (s *Service) awaitSeq(ctx context.Context, seq uint64) {
	if seq == 0 || s.rm.AppliedSeq() >= seq {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, OwnWriteWait)
	defer cancel()
	if err := s.rm.WaitFor(wctx, seq); err != nil {
		s.metrics.AssemblyErrors.WithLabelValues("session_wait").Inc()
	}
}

// noteSession wraps reply to remember the sequence of who's command to
// session id (and to set its consistency token).
func (s *Service) noteSession(who *tenancy.Caller, id string, reply actors.ReplyFunc) actors.ReplyFunc {
	return func(m proto.Message, err error) {
		if res := s.written(id, m, err); res != nil {
			s.sessionSeqs.Note(id, res.GetSeq())
			s.recent.Note(who, id, res.GetSeq())
		}
		reply(m, err)
	}
}

// tokened wraps reply to set the consistency token of a write to
// aggregate id on its result (written).
func (s *Service) tokened(id string, reply actors.ReplyFunc) actors.ReplyFunc {
	return func(m proto.Message, err error) {
		s.written(id, m, err)
		reply(m, err)
	}
}

// mutationResult is a reply carrying a write's result.
type mutationResult interface {
	GetResult() *memoryv1.MutationReply
}

// written sets the consistency token (the partition of id's hash) of m, a
// reply to a write to aggregate id, and returns its result (nil: none).
func (s *Service) written(id string, m proto.Message, err error) *memoryv1.MutationReply {
	r, ok := m.(mutationResult)
	if !ok || err != nil {
		return nil
	}
	if res, k := r.GetResult(), s.cfg.LogPartitions; res.GetSeq() > 0 {
		res.Consistency = consistency.Format(k, events.LogPartition(id, k), res.GetSeq())
	}
	return r.GetResult()
}

// awaitOwnWrite waits, at most OwnWriteWait, until the projection applied
// the caller's last scope write, so an entry put right before a user
// message is among that message's memory candidates. Past the bound the
// search reads what is applied (and counts it).
func (s *Service) awaitOwnWrite(ctx context.Context, who *tenancy.Caller) {
	seq := s.writes.Last(who)
	if seq == 0 || s.rm.AppliedSeq() >= seq {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, OwnWriteWait)
	defer cancel()
	if err := s.rm.WaitFor(wctx, seq); err != nil {
		s.metrics.AssemblyErrors.WithLabelValues("own_write_wait").Inc()
	}
}

// noteWrites wraps reply to remember the sequence of who's write to the
// scope id (and to set its consistency token).
func (s *Service) noteWrites(who *tenancy.Caller, id string, reply actors.ReplyFunc) actors.ReplyFunc {
	return func(m proto.Message, err error) {
		if res := s.written(id, m, err); res != nil {
			s.writes.Note(who, res.GetSeq())
		}
		reply(m, err)
	}
}

type scopeRef struct {
	kind     sharedmem.Kind
	id, tier string
}

// name is the scope's kind:id ("global" for the global scope).
func (r scopeRef) name() string {
	if r.kind == sharedmem.KindGlobal {
		return sharedmem.GlobalID
	}
	return string(r.kind) + ":" + r.id
}

// assemblyScopes are the scopes of a session's memory section, by tier.
func assemblyScopes(id string, k segmented.CandidateKey) []scopeRef {
	refs := []scopeRef{}
	if a := k.Agent; a != "" {
		refs = append(refs, scopeRef{sharedmem.KindAgent, a, segmented.TierTask})
	}
	if t := k.AgentType; t != "" {
		// What the agent's kind learned is offered like its own memory.
		refs = append(refs, scopeRef{sharedmem.KindAgentType, t, segmented.TierTask})
	}
	refs = append(refs, scopeRef{sharedmem.KindSession, id, segmented.TierTask})
	for _, r := range []scopeRef{
		{sharedmem.KindUser, k.User, segmented.TierUser},
		{sharedmem.KindProject, k.Project, segmented.TierUser},
		{sharedmem.KindApp, k.App, segmented.TierUser},
	} {
		if r.id != "" {
			refs = append(refs, r)
		}
	}
	return append(refs, scopeRef{sharedmem.KindGlobal, sharedmem.GlobalID, segmented.TierGlobal})
}

// memoryCandidates gathers, from every scope of the session who may read
// (the session scope follows the session, which who reached), the entries
// matching q, best first across the tier's scopes by BM25 score weighted
// by importance (1 + importance), then each scope's most important and
// most recent entries.
func (s *Service) memoryCandidates(who *tenancy.Caller, id string, k segmented.CandidateKey, q string) ([]*memoryv1.MemoryItem, []float64) {
	type scored struct {
		item  *memoryv1.MemoryItem
		score float64
	}
	var matched, top []scored
	for _, r := range assemblyScopes(id, k) {
		if r.kind != sharedmem.KindSession && who.Scope(string(r.kind), r.id, false) != nil {
			continue
		}
		kind := actors.AggregateKind(r.kind)
		hits, err := s.entries.SearchEntries(kind, r.id, &memoryv1.SearchEntriesRequest{Query: q, Limit: memoryMatches})
		if err == nil {
			for _, h := range hits {
				if it := memoryItem(r, h.GetEntry()); it != nil {
					matched = append(matched, scored{it, h.GetScore() * (1 + h.GetEntry().GetImportance())})
				}
			}
		}
		var tops []*memoryv1.Entry
		if err == nil {
			tops, err = s.entries.TopEntries(kind, r.id, memoryTop)
		}
		if err != nil {
			s.metrics.AssemblyErrors.WithLabelValues("memory").Inc()
			s.logger.Warn("context assembler: scope search failed; appending without its entries", "session", id, "scope", string(r.kind)+":"+r.id, "err", err)
			continue
		}
		for i, e := range tops {
			if it := memoryItem(r, e); it != nil {
				top = append(top, scored{it, -float64(i)})
			}
		}
	}
	slices.SortStableFunc(matched, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	slices.SortStableFunc(top, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	out := make([]*memoryv1.MemoryItem, 0, len(matched)+len(top))
	scores := make([]float64, 0, len(matched)+len(top))
	for _, x := range matched {
		out, scores = append(out, x.item), append(scores, x.score)
	}
	for _, x := range top {
		out, scores = append(out, x.item), append(scores, 0)
	}
	return out, scores
}

// memoryItem is an entry as a candidate: text values only (binary values
// have no place in a prompt), cut to maxCandidateValueBytes.
func memoryItem(r scopeRef, e *memoryv1.Entry) *memoryv1.MemoryItem {
	v := e.GetValue()
	if e.GetDeleted() || e.GetCompressed() || !utf8.Valid(v) || hiddenFromMemory(e) {
		return nil
	}
	if (r.kind == sharedmem.KindGlobal || r.kind == sharedmem.KindApp) && strings.HasPrefix(e.GetKey(), segmented.PatternKeyPrefix) {
		return nil // a pattern library's: in the ROM already
	}
	// The key's digest, which the context records, taken here once per
	// search rather than by the session actor at each decision.
	return &memoryv1.MemoryItem{Scope: r.name(), Key: e.GetKey(), KeySha256: segmented.KeySum(e.GetKey()), Version: e.GetVersion(), Tier: r.tier,
		Text: string(utf8cut.Prefix(v, maxCandidateValueBytes))}
}
