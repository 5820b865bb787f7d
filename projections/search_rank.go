package projections

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Search limits: limit 1..MaxSearchLimit, 0 means DefaultSearchLimit.
// A message search (Search, SearchWith) takes up to MaxCandidateLimit: the
// node's context assembler asks for tens of candidates (hundreds from a
// user's earlier sessions for a large budget), where the API keeps its
// clients to MaxSearchLimit.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 20
	MaxCandidateLimit  = 400
)

// RerankDepth is the number of best BM25 candidates (at least limit) that
// the proximity re-ranking may read and score again; the hits are the best
// limit of them. Measured (BenchmarkSearchRanking, 100k messages, 2 CPUs):
// 50 cost +40-55% p50 over plain BM25, 20 +15-20%, and the evaluation
// (search_eval_test.go) ranks the same with 10, 20 or 50.
const RerankDepth = 20

// FusionDepth is the length of each ranking fused with vectors: the best
// lexical candidates (all re-ranked by proximity) and the nearest vectors.
const FusionDepth = 50

// SearchOptions adjust one search; the zero value is the default ranking
// (Search).
type SearchOptions struct {
	// Plain ranks by BM25 over every query term and nothing else: the
	// ranking before schema 5, kept for comparisons (evaluations,
	// benchmarks). It ignores QueryVector.
	Plain bool
	// QueryVector is the query's embedding (a unit vector of the model the
	// VectorIndexer uses: internal/embed). When set, the FusionDepth
	// documents nearest to it are fused with the lexical ranking by
	// reciprocal rank fusion (RRFK); documents without a vector are ranked
	// by the lexical ranking alone. Nil: lexical ranking only.
	QueryVector []float32
	// Corpus, when set, searches every session of that user (Corpus.User;
	// "" : every session without a user, which the caller filters, e.g. by
	// agent) without looking the session up: a session the projection does
	// not know yet (just created) still finds its user's history.
	Corpus *Corpus
}

// Corpus names a user's sessions (SearchOptions.Corpus).
type Corpus struct {
	User string
	// Fill, with a user, fills the hits up to the limit with the user's
	// messages the query did not match, newest first, scored below every
	// hit (fillUser): the context assembler's search of a returning
	// user's history, whose room may hold all of it.
	Fill bool
	// Except is a session the search leaves out, in the ranking and in
	// the fill (the assembling session's own messages: its swap search
	// covers them). Left out when ranking, its messages neither take the
	// places of the other sessions' hits nor feed Feedback.
	Except string
	// Feedback expands the query once with the rarest terms of its best
	// hits (pseudo-relevance feedback: search_feedback.go).
	Feedback bool
	// Replies puts after each of the best hits that asks a question the
	// message that answers it (search_replies.go).
	Replies bool
}

// maxExpansionClauses bounds the related-word clauses of one query
// (ranking.expand): each reads a posting list.
const maxExpansionClauses = 12

// RRFK is the k of reciprocal rank fusion: a document's fused score is
// Σ 1/(RRFK + rank) over the rankings it appears in (rank 1 = best), as in
// Cormack, Clarke and Büttcher (SIGIR 2009).
const RRFK = 60

// ranking holds the switches of the ranker. Search uses defaultRanking;
// the evaluation (search_eval_test.go) turns them one by one.
type ranking struct {
	// dropStop drops stop terms (swap.IsStopTerm) from the query when
	// another term of it is in the corpus: a content term that is not a
	// stop term, a speaker or a day.
	dropStop bool
	// idfFloor > 0 drops the terms whose idf is below it when a term at or
	// above it is in the corpus (an alternative to dropStop, measured).
	idfFloor float64
	// speaker weighs a match of a query term on the speaker's name: it adds
	// speaker · idf(speaker term). 0: off.
	speaker float64
	// dates weighs a match of a day the query names on the day the message
	// was said: dates · idf(those days). 0: off.
	dates float64
	// proximity weighs swap's BM25TP proximity score of the best
	// RerankDepth candidates (FusionDepth when fusing). 0: off.
	proximity float64
	// recency > 0 prefers the newer of the candidates (the RerankDepth
	// best, FusionDepth when fusing): the i-th oldest of n has its score
	// multiplied by 1 + recency·i/(n−1). 0: off.
	recency float64
	// dedupe keeps one hit per text and session: a candidate whose content equals
	// (ignoring case and runs of white space) that of a better one is
	// dropped.
	dedupe bool
	// question > 0 lowers, for a query that is a question
	// (swap.IsQuestion), the score of a candidate by the share of its words
	// in questions (swap.QuestionShare): × (1 − question·share). 0: off.
	question float64
	// readAll re-ranks every candidate, without skipping those that their
	// bound proves cannot reach the hits (tests compare both).
	readAll bool
	// exhaustive scores every posting of every clause (no pruning:
	// search_prune.go) and re-ranks a query to be expanded by feedback
	// for all its hits before choosing the expansion: the search as it
	// was before those cuts, kept for the tests that compare both.
	exhaustive bool
	// expand > 0 adds the terms related to the query's content terms
	// (swap.Expand) as BM25 clauses scaled by expand. 0: off.
	expand float64
	// summaries ranks the session's archived summaries (its summary
	// corpus, summaries.go) instead of messages.
	summaries bool
}

// defaultRanking: stop words dropped, speaker and day matches weighed like
// one content term (weight 1 × idf), proximity added as BM25TP defines it
// (weight 1), the newest candidate worth 10% more than the oldest, one hit
// per text, and for a question the words of candidates that are questions
// themselves worth half. The weights are round values, not fitted: the
// evaluation (search_eval_test.go) reports what each part brings, and
// membench (issue 8 and after) the figures on a longer benchmark.
var defaultRanking = ranking{dropStop: true, speaker: 1, dates: 1, proximity: 1, recency: 0.1, dedupe: true, question: 0.5, expand: 0.4}

// plainRanking is BM25 over every query term.
var plainRanking = ranking{}

// Search ranks the messages of session sessionID (scope SESSION or
// UNSPECIFIED) or of every session of its user (scope USER) against query
// and returns at most limit hits, best first (ties: older document first).
// limit is 1..MaxCandidateLimit, 0 means 10. It is SearchWith with the zero SearchOptions.
func (s *Store) Search(sessionID string, scope memoryv1.SearchScope, query string, limit int) ([]*memoryv1.SearchHit, error) {
	return s.SearchWith(sessionID, scope, query, limit, SearchOptions{})
}

// SearchWith is Search with options. The ranking (the score of a hit is
// the sum of these parts):
//
//   - BM25 (swap.DefaultBM25) of the query's content terms. Stop words and
//     question words ("what", "did", "you") are dropped from the query when
//     another of its terms is in the corpus, never otherwise: "what?" alone
//     still searches.
//   - Speaker: a query term that is a term of a message's speaker name
//     (Message.name) adds idf(that speaker term), so "what did Alice say
//     about the deploy" prefers Alice's messages about it.
//   - Day: when the query names days ("8 May 2023", "2023-05-08", "May
//     2023": swap.QueryDates), a message said on one of them (said_unix_nano,
//     else its append time; UTC) adds idf(those days). It is a boost, not a
//     filter: a message of another day can still rank.
//   - Proximity: the best RerankDepth candidates are read and their text
//     scored again with swap's BM25TP proximity (query terms adjacent or
//     close, in query order best); a candidate whose proximity bound
//     (from its term frequencies) cannot lift it into the hits is not read.
//   - Recency: of those candidates, the i-th oldest of n has its score
//     multiplied by 1 + 0.1·i/(n−1), so of statements that match alike
//     the newest (a correction: the current value) ranks first.
//   - Questions: when the query is a question, a candidate's score is
//     multiplied by 1 − 0.5·(share of its words in sentences ending with
//     '?'): a turn asking the question again ("Remind me: who leads X?")
//     is not its answer.
//   - One hit per text: a candidate whose content equals a better one's
//     (case and white space aside) is dropped, so a text repeated ten
//     times takes one place, not ten.
//
// The best BM25 candidates are found without scoring every document: a
// document whose score is bounded below the candidates already kept is
// skipped (search_prune.go), and a search with Corpus.Feedback ranks the
// expanded query by adding the expansion's scores to the first ranking's
// (search_reuse.go). Both are exact: the hits, their order and their
// scores are those of scoring every document.
//
// Any query string is accepted: there is no query syntax, punctuation only
// separates words, so `customer-id`, `O'Brien`, `"unbalanced` or `*` are
// plain text. A query without any term or date, or a session the
// projection does not know (yet), returns no hits and no error.
//
// idf and avgdl are the statistics of the user's corpus in both scopes. A
// session without a user is searched in SESSION scope even when USER is
// asked: anonymous sessions do not share a user.
func (s *Store) SearchWith(sessionID string, scope memoryv1.SearchScope, query string, limit int, opts SearchOptions) ([]*memoryv1.SearchHit, error) {
	rk := defaultRanking
	if opts.Plain {
		rk, opts.QueryVector = plainRanking, nil
	}
	return s.searchVec(sessionID, scope, query, limit, rk, opts.QueryVector, opts.Corpus)
}

func (s *Store) search(sessionID string, scope memoryv1.SearchScope, query string, limit int, rk ranking) ([]*memoryv1.SearchHit, error) {
	return s.searchVec(sessionID, scope, query, limit, rk, nil, nil)
}

func (s *Store) searchVec(sessionID string, scope memoryv1.SearchScope, query string, limit int, rk ranking, qvec []float32, corpus *Corpus) ([]*memoryv1.SearchHit, error) {
	limit, err := resolveLimit(limit, DefaultSearchLimit, MaxCandidateLimit)
	if err != nil {
		return nil, err
	}
	if scope != memoryv1.SearchScope_SEARCH_SCOPE_UNSPECIFIED && scope != memoryv1.SearchScope_SEARCH_SCOPE_SESSION &&
		scope != memoryv1.SearchScope_SEARCH_SCOPE_USER {
		return nil, &ArgumentError{Field: "scope", Reason: fmt.Sprintf("unknown scope %d", scope)}
	}
	var q swap.Query
	if rk == plainRanking {
		for _, t := range swap.QueryTerms(query) {
			q.Terms = append(q.Terms, swap.QueryTerm{Term: t})
		}
	} else {
		q = swap.ParseQuery(query)
	}
	if len(q.Terms) == 0 && (len(q.Dates) == 0 || rk.dates == 0) && len(qvec) == 0 {
		return []*memoryv1.SearchHit{}, nil
	}
	hits := []*memoryv1.SearchHit{}
	err = s.view(func(tx *bolt.Tx) error {
		var (
			userKey string
			filter  []byte // session filter; nil = every session of the user
		)
		if corpus != nil {
			userKey = corpus.User
		} else {
			entry, err := getSession(tx, sessionID)
			if err != nil || entry == nil {
				return err
			}
			userKey = entry.GetUserId()
			if scope != memoryv1.SearchScope_SEARCH_SCOPE_USER || userKey == "" {
				filter = []byte(sessionID)
			}
		}
		if rk.summaries {
			userKey, filter = summaryCorpus(userKey), []byte(sessionID)
		}
		n, total := parseStatsValue(tx.Bucket(bucketBM25Stats).Get(statsKey(userKey)))
		if n == 0 {
			return nil
		}
		r := ranker{
			rk: rk, bm: swap.DefaultBM25(), userKey: userKey, filter: filter, n: n, avgdl: float64(total) / float64(n),
			terms: tx.Bucket(bucketBM25Terms), postings: tx.Bucket(bucketBM25Postings),
			docs: tx.Bucket(bucketBM25Docs), msgs: tx.Bucket(bucketSwapMessages), sums: tx.Bucket(bucketSwapSummaries),
		}
		defer func() {
			if r.first != nil {
				r.first.release()
			}
		}()
		if corpus != nil && corpus.Except != "" && filter == nil {
			r.except = []byte(corpus.Except)
		}
		if filter == nil && s.LogPartitions() > 1 {
			r.ages = newDocAges(tx) // several sessions, several streams: search_age.go
		}
		// With feedback, the first ranking lends its best feedbackDocs
		// hits their terms: only their order needs settling (rank's need)
		// before the query is expanded and ranked again.
		need := limit
		feedback := corpus != nil && corpus.Feedback
		if feedback && !rk.exhaustive {
			need = min(limit, feedbackDocs)
			r.record = true // the ranking after the feedback adds to its scores
		}
		cands, err := r.rank(q, limit, need, len(qvec) > 0)
		if err != nil {
			return err
		}
		if feedback && len(cands) > 0 {
			if r.extra, err = r.feedback(q, cands); err != nil {
				return err
			}
			if len(r.extra) > 0 || need < limit {
				if cands, err = r.rank(q, limit, limit, len(qvec) > 0); err != nil {
					return err
				}
			}
		}
		if len(qvec) > 0 {
			cands = fuse(cands, r.vectorTop(tx.Bucket(bucketVectors), qvec, FusionDepth), r.compareDocs)
			if r.ages != nil && r.ages.err != nil {
				return r.ages.err
			}
		}
		for _, c := range cands[:min(limit, len(cands))] {
			if err := r.load(c); err != nil {
				return err
			}
			h := &memoryv1.SearchHit{SessionId: c.d.sid, Message: c.msg, Summary: c.d.sum, Score: c.score, Kind: HitMessage}
			if c.d.sum != nil {
				h.Kind = HitSummary
			}
			hits = append(hits, h)
		}
		if corpus != nil && corpus.Replies {
			if hits, err = r.replies(hits, limit); err != nil {
				return err
			}
		}
		if corpus != nil && corpus.Fill {
			hits, err = fillUser(tx, corpus.User, corpus.Except, hits, limit)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}

// ranker ranks one query inside a read transaction.
type ranker struct {
	rk      ranking
	bm      swap.BM25
	userKey string
	filter  []byte
	// except is a session whose documents are left out (Corpus.Except):
	// never set with filter.
	except []byte
	// extra are clauses added to every query's (feedback's expansion).
	extra []clause
	// ages, when set, orders documents by age instead of doc id
	// (search_age.go): a search of several sessions of a log in
	// partitions.
	ages *docAges
	// record makes the next score keep every document's score in first
	// (the first ranking of a feedback search); the rankings after it
	// add the clauses that follow those to them (search_reuse.go).
	record bool
	first  *firstScores
	// reads caches what the search read of each document and computed
	// from its text (a document read by both rankings of a feedback
	// search is read once).
	reads map[uint64]*docRead
	// docsC and msgsC look documents and messages up (cursorGet), kbuf
	// holds the key: no cursor nor key allocated per lookup.
	docsC, msgsC *bolt.Cursor
	kbuf         []byte
	n            uint64 // documents of the user
	avgdl        float64
	terms        *bolt.Bucket
	postings     *bolt.Bucket
	docs         *bolt.Bucket
	msgs         *bolt.Bucket
	sums         *bolt.Bucket
}

// clause is one scored term of a query: a content term (BM25 of its tf and
// the document length) or a field term (weight · idf when present).
type clause struct {
	term   string
	idf    float64
	field  bool
	weight float64
	// scale > 0 multiplies a content clause's BM25 score (an expansion).
	scale float64
}

// docRead is what read reads of a document, and what the re-ranking
// computes of its text, once per search.
type docRead struct {
	docLen  uint32
	sid     string
	seq     uint64
	content string
	sum     *memoryv1.Summary
	raw     []byte // the stored message (aliases the transaction's page)
	// Computed from content when first needed (has*): the proximity
	// score, the share of words in questions, the dedupe key.
	prox, share       float64
	key               string
	hasProx, hasShare bool
	hasKey            bool
}

// candidate is a ranked document. bound bounds what proximity may add to
// its score (0: fewer than two content terms, nothing); read fills docLen,
// sid, seq and content, load msg.
type candidate struct {
	docID uint64
	score float64
	bound float64
	msg   *memoryv1.Message
	// d is what read read of the document (its length, session, seq,
	// content, and summary for a summary document: msg stays nil then).
	d *docRead
	// boost multiplies the score for recency; upper bounds the final score
	// (rank); dup marks a copy of a better candidate's text (dedupe).
	boost float64
	upper float64
	dup   bool
}

// rank returns the best candidates, best first: the best limit of them are
// the hits (more when the ranking reads candidates: RerankDepth, or deep
// asks for FusionDepth, for a fusion). Only the order of the best need
// (≤ limit) is settled: the candidates that cannot be among them are not
// re-ranked (the others are the best limit when need is limit).
func (r *ranker) rank(q swap.Query, limit, need int, deep bool) ([]*candidate, error) {
	content, clauses := r.clauses(q)
	if len(clauses) == 0 {
		return nil, nil
	}
	proximity := r.rk.proximity > 0 && len(content) >= 2
	asked := r.rk.question > 0 && q.Question
	rerank := proximity || asked || r.rk.dedupe || r.rk.recency > 0
	depth := limit
	switch {
	case deep:
		depth = max(limit, FusionDepth)
	case rerank:
		depth = max(limit, RerankDepth)
	}
	var prox *proximityClauses
	if proximity {
		prox = newProximityClauses(content, r.rk.proximity)
	}
	top, err := r.score(clauses, depth, prox)
	if err == nil && r.ages != nil {
		err = r.ages.err
	}
	if err != nil {
		return nil, err
	}
	cands := make([]*candidate, 0, top.Len())
	all := make([]candidate, top.Len()) // one allocation for all
	for i, h := range top.Sorted() {
		all[i] = candidate{docID: h.DocID, score: h.Score, bound: h.Bound, boost: 1}
		cands = append(cands, &all[i])
	}
	if !rerank {
		return cands, nil
	}
	if r.ages != nil {
		// Every candidate's age is needed below: read each once (its
		// content with it) rather than its age and then its content.
		for _, c := range cands {
			if err := r.read(c); err != nil {
				return nil, err
			}
		}
	}
	if r.rk.recency > 0 && len(cands) > 1 {
		byAge := slices.Clone(cands)
		slices.SortFunc(byAge, func(a, b *candidate) int { return r.compareDocs(a.docID, b.docID) })
		for i, c := range byAge {
			c.boost = 1 + r.rk.recency*float64(i)/float64(len(byAge)-1)
		}
	}
	// Each part multiplies by at most boost or adds at most bound, so
	// (score + bound)·boost bounds a candidate's final score. Candidates
	// are taken by that bound, best first; once it is below the limit-th
	// best final score of distinct texts, no later candidate can reach the
	// hits, and is left unread with its score times its boost (unless the
	// whole order counts: a fusion).
	for _, c := range cands {
		c.upper = (c.score + c.bound) * c.boost
	}
	slices.SortStableFunc(cands, func(a, b *candidate) int { return cmp.Compare(b.upper, a.upper) })
	best := make([]float64, 0, need+1)              // the best need final scores, ascending
	seen := make(map[string]*candidate, len(cands)) // dedupe: text → its best candidate
	for _, c := range cands {
		if !deep && !r.rk.readAll && len(best) == need && c.upper < best[0] {
			c.score *= c.boost
			continue
		}
		if err := r.read(c); err != nil {
			return nil, err
		}
		if proximity && c.bound > 0 {
			if !c.d.hasProx {
				c.d.prox, c.d.hasProx = r.bm.ProximityText(c.d.content, prox.terms, prox.weights, c.d.docLen, r.avgdl), true
			}
			c.score += r.rk.proximity * c.d.prox
		}
		c.score *= c.boost
		if asked {
			if !c.d.hasShare {
				c.d.share, c.d.hasShare = swap.QuestionShare(c.d.content), true
			}
			c.score *= 1 - r.rk.question*c.d.share
		}
		if r.rk.dedupe {
			// Per session: in a USER search the same words said in two
			// sessions are two places to find them.
			if !c.d.hasKey {
				c.d.key, c.d.hasKey = dedupeKey(c.d.sid, c.d.content), true
			}
			key := c.d.key
			d, ok := seen[key]
			if ok && !r.before(c, d) {
				c.dup = true // a copy of a better hit: not one itself
				continue
			}
			seen[key] = c
			if ok {
				// c replaces d, a worse copy of its text, in best.
				d.dup = true
				if i, found := slices.BinarySearch(best, d.score); found {
					best = slices.Delete(best, i, i+1)
				}
			}
		}
		i, _ := slices.BinarySearch(best, c.score)
		best = slices.Insert(best, i, c.score)
		if len(best) > need {
			best = best[1:]
		}
	}
	if r.rk.dedupe {
		cands = slices.DeleteFunc(cands, func(c *candidate) bool { return c.dup })
	}
	slices.SortStableFunc(cands, func(a, b *candidate) int {
		if r.before(a, b) {
			return -1
		}
		if r.before(b, a) {
			return 1
		}
		return 0
	})
	if r.ages != nil && r.ages.err != nil {
		return nil, r.ages.err
	}
	return cands, nil
}

// before reports whether a ranks before b: a higher score, or the same
// score and the older document (the smaller doc id, or compareDocs).
func (r *ranker) before(a, b *candidate) bool {
	return a.score > b.score || (a.score == b.score && r.compareDocs(a.docID, b.docID) < 0)
}

// textKey is the key under which dedupe compares texts: lower-cased, runs
// of white space as one space, trimmed.
func textKey(s string) string { return dedupeKey("", s)[1:] }

// dedupeKey is sid, a 0 byte and textKey(s) (one pass when s is ASCII).
func dedupeKey(sid, s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return sid + "\x00" + strings.Join(strings.Fields(strings.ToLower(s)), " ")
		}
	}
	// ASCII: the same in one pass (strings.Fields' ASCII spaces, ToLower's
	// ASCII letters).
	b := make([]byte, 0, len(sid)+1+len(s))
	b = append(append(b, sid...), 0)
	start, space := len(b), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\t', '\n', '\v', '\f', '\r', ' ':
			space = len(b) > start
			continue
		}
		if space {
			b, space = append(b, ' '), false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

// fuse merges the lexical ranking (best first) with the vector ranking by
// reciprocal rank fusion; ties: the older document first (docs orders
// two doc ids: the ranker's compareDocs).
func fuse(lexical []*candidate, vec *swap.TopK, docs func(x, y uint64) int) []*candidate {
	byDoc := make(map[uint64]*candidate, len(lexical)+vec.Len())
	out := make([]*candidate, 0, len(lexical)+vec.Len())
	for i, c := range lexical {
		c.score = 1 / float64(RRFK+i+1)
		byDoc[c.docID] = c
		out = append(out, c)
	}
	for i, h := range vec.Sorted() {
		if c, ok := byDoc[h.DocID]; ok {
			c.score += 1 / float64(RRFK+i+1)
			continue
		}
		c := &candidate{docID: h.DocID, score: 1 / float64(RRFK+i+1)}
		byDoc[h.DocID] = c
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *candidate) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return docs(a.docID, b.docID)
	})
	return out
}

// clauses returns the clauses of q present in the user's corpus, and the
// content clauses among them in query order (for proximity).
func (r *ranker) clauses(q swap.Query) (content, all []clause) {
	type known struct {
		clause
		stop bool
	}
	var terms []known
	other := false // a known term that is not a stop term
	for _, t := range q.Terms {
		if strings.IndexByte(t.Term, sep) >= 0 {
			continue
		}
		if df := termDF(r.terms, termKey(r.userKey, t.Term)); df > 0 {
			terms = append(terms, known{clause{term: t.Term, idf: r.bm.IDF(r.n, df)}, t.Stop})
			other = other || !t.Stop
		}
		if r.rk.speaker > 0 {
			if df := termDF(r.terms, termKey(r.userKey, speakerTerm(t.Term))); df > 0 {
				all = append(all, clause{term: speakerTerm(t.Term), idf: r.bm.IDF(r.n, df), field: true, weight: r.rk.speaker})
				other = true
			}
		}
	}
	if r.rk.dates > 0 {
		for _, d := range q.Dates {
			days, df := r.days(d)
			if df == 0 {
				continue
			}
			idf := r.bm.IDF(r.n, df) // the range as one term: its days' documents
			for _, t := range days {
				all = append(all, clause{term: t, idf: idf, field: true, weight: r.rk.dates})
			}
			other = true
		}
	}
	floor := 0.0
	if r.rk.idfFloor > 0 && slices.ContainsFunc(terms, func(k known) bool { return k.idf >= r.rk.idfFloor }) {
		floor = r.rk.idfFloor
	}
	for _, k := range terms {
		if (r.rk.dropStop && other && k.stop) || k.idf < floor {
			continue
		}
		content = append(content, k.clause)
	}
	if r.rk.expand > 0 {
		var ts []string
		for _, t := range q.Terms {
			ts = append(ts, t.Term)
		}
		var exp []clause
		for _, t := range swap.Expand(ts) {
			// A related word in more than a tenth of the documents says
			// little and costs a long posting list: left out.
			if df := termDF(r.terms, termKey(r.userKey, t)); df > 0 && df*10 <= r.n {
				exp = append(exp, clause{term: t, idf: r.bm.IDF(r.n, df), scale: r.rk.expand})
			}
		}
		// The rarest first: they discriminate most and read the least.
		slices.SortStableFunc(exp, func(a, b clause) int { return cmp.Compare(b.idf, a.idf) })
		all = append(all, exp[:min(len(exp), maxExpansionClauses)]...)
	}
	all = append(all, r.extra...)
	return content, append(slices.Clip(content), all...)
}

// days returns the day terms of d present in the user's corpus and the sum
// of their document frequencies (a message has one day: no overlap).
func (r *ranker) days(d swap.DayRange) ([]string, uint64) {
	var out []string
	var df uint64
	for day := d.First; day <= d.Last; day++ {
		t := dayTerm(day)
		if n := termDF(r.terms, termKey(r.userKey, t)); n > 0 {
			out = append(out, t)
			df += n
		}
	}
	return out, df
}

// read reads c's document and the content of its message (once), without
// decoding the whole message.
func (r *ranker) read(c *candidate) error {
	if c.d != nil {
		return nil
	}
	d := r.reads[c.docID]
	if d == nil {
		var err error
		if d, err = r.readDoc(c.docID); err != nil {
			return err
		}
		if r.reads == nil {
			r.reads = make(map[uint64]*docRead)
		}
		r.reads[c.docID] = d
	}
	c.d = d
	return nil
}

// readDoc reads document id (read).
func (r *ranker) readDoc(id uint64) (*docRead, error) {
	if r.docsC == nil {
		r.docsC, r.msgsC = r.docs.Cursor(), r.msgs.Cursor()
	}
	r.kbuf = binary.BigEndian.AppendUint64(r.kbuf[:0], id)
	dv := cursorGet(r.docsC, r.kbuf)
	docLen, seq, sid, err := parseDocValue(dv)
	if err != nil {
		return nil, err
	}
	if seq == summaryDocMark {
		sum, err := getSummaryDoc(r.sums, dv)
		if err != nil {
			return nil, err
		}
		d := &docRead{docLen: docLen, sid: sid, seq: sum.GetLastSeq(), content: sum.GetText(), sum: sum}
		if r.ages != nil {
			r.ages.ages[id] = ageKey{sid: sid, seq: d.seq}
		}
		return d, nil
	}
	r.kbuf = binary.BigEndian.AppendUint64(append(append(r.kbuf[:0], sid...), sep), seq) // swapMessageKey
	v := cursorGet(r.msgsC, r.kbuf)
	if v == nil {
		return nil, fmt.Errorf("projections: bm25 doc %d points to missing message %s/%d", id, sid, seq)
	}
	content, err := messageContent(v)
	if err != nil {
		return nil, fmt.Errorf("projections: stored message %s/%d: %w", sid, seq, err)
	}
	if r.ages != nil {
		// Its age, from the bytes read anyway (search_age.go).
		created, said, err := messageTimes(v)
		if err != nil {
			return nil, fmt.Errorf("projections: stored message %s/%d: %w", sid, seq, err)
		}
		r.ages.ages[id] = ageKey{created: created, said: said, sid: sid, seq: seq}
	}
	return &docRead{docLen: docLen, sid: sid, seq: seq, content: content, raw: v}, nil
}

// cursorGet is Get of c's bucket through c (a bucket's Get makes a new
// cursor each time): the value of key, nil when absent (or a bucket).
func cursorGet(c *bolt.Cursor, key []byte) []byte {
	k, v := c.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// load decodes c's message (once), from the bytes read kept.
func (r *ranker) load(c *candidate) error {
	if c.msg != nil {
		return nil
	}
	if err := r.read(c); err != nil || c.d.sum != nil {
		return err
	}
	m := new(memoryv1.Message)
	if err := proto.Unmarshal(c.d.raw, m); err != nil {
		return fmt.Errorf("projections: stored message %s/%d: %w", c.d.sid, c.d.seq, err)
	}
	c.msg = m
	return nil
}

// termIter walks the postings of one query term, block by block (a prefix
// cursor over the term's blocks, each value decoded sequentially), skipping
// the postings of other sessions when a session filter is set (of that
// session when exclude is set).
type termIter struct {
	c       *bolt.Cursor
	prefix  []byte
	filter  []byte
	exclude bool
	cl      clause
	prox    int // index of this clause in proximityClauses, -1 if none
	r       postingBlockReader
	cur     blockPosting
	done    bool
	inline  bool           // the term's blocks are in its bm25_terms value
	blocks  []postingBlock // the inline blocks still to read
}

func newTermIter(terms, b *bolt.Bucket, userKey string, cl clause, filter, except []byte) (*termIter, error) {
	it := &termIter{c: b.Cursor(), prefix: postingPrefix(userKey, cl.term), filter: filter, cl: cl}
	if filter == nil && except != nil {
		it.filter, it.exclude = except, true
	}
	if v := terms.Get(termKey(userKey, cl.term)); v != nil {
		_, inline, err := parseTermValue(v, nil)
		if err != nil {
			return nil, err
		}
		if inline != nil {
			it.inline = true
			it.r.reset(inline[0].block, inline[0].v, it.filter)
			it.blocks = inline[1:]
			return it, it.advance()
		}
	}
	k, v := it.c.Seek(it.prefix)
	if err := it.load(k, v); err != nil {
		return nil, err
	}
	return it, it.advance()
}

// load starts decoding the block at k (or ends the iterator past the
// term's prefix).
func (it *termIter) load(k, v []byte) error {
	if k == nil || !bytes.HasPrefix(k, it.prefix) {
		it.done = true
		return nil
	}
	if len(k) != len(it.prefix)+8 {
		return fmt.Errorf("projections: malformed posting key %q", k)
	}
	it.r.reset(beU64(k[len(it.prefix):]), v, it.filter)
	return nil
}

// advance moves to the next posting that passes the filter.
func (it *termIter) advance() error {
	for !it.done {
		p, ok, err := it.r.next()
		if err != nil {
			return err
		}
		if !ok {
			if it.inline {
				if len(it.blocks) == 0 {
					it.done = true
					return nil
				}
				it.r.reset(it.blocks[0].block, it.blocks[0].v, it.filter)
				it.blocks = it.blocks[1:]
				continue
			}
			if err := it.load(it.c.Next()); err != nil {
				return err
			}
			continue
		}
		if it.filter != nil && p.match == it.exclude {
			continue
		}
		it.cur = p
		return nil
	}
	return nil
}

// proximityClauses are the content clauses proximity scores, and room for
// one document's term frequencies.
type proximityClauses struct {
	terms   []string
	weights []float64
	tf      []uint32
	weight  float64 // ranking.proximity
}

func newProximityClauses(content []clause, weight float64) *proximityClauses {
	p := &proximityClauses{weight: weight, tf: make([]uint32, len(content))}
	for _, c := range content {
		p.terms, p.weights = append(p.terms, c.term), append(p.weights, c.idf)
	}
	return p
}

// score scores every document matching at least one clause (of the
// session filter, if any) and returns the best k. The posting lists are
// merged in doc id order (document at a time), so no per-document map is
// needed; a document's score is the sum of its clauses' scores in clause
// order, the same float operations as accumulating clause by clause. With
// prox (whose terms are the first clauses), each hit kept carries a bound
// of its proximity score (swap.BM25.ProximityBound of its term
// frequencies, times the weight) in Hit.Bound.
func (r *ranker) score(clauses []clause, k int, prox *proximityClauses) (*swap.TopK, error) {
	top := r.newTop(k)
	first := r.first
	if first != nil && (len(clauses) < len(first.clauses) || !slices.Equal(clauses[:len(first.clauses)], first.clauses)) {
		first = nil // not the clauses scored first (cannot happen: a feedback search's)
	}
	var skip int // clauses whose scores first holds
	if first != nil {
		skip = len(first.clauses)
	}
	its := make([]*termIter, 0, len(clauses)-skip)
	for i, cl := range clauses[skip:] {
		i += skip
		it, err := newTermIter(r.terms, r.postings, r.userKey, cl, r.filter, r.except)
		if err != nil {
			return nil, err
		}
		it.prox = -1
		if prox != nil && i < len(prox.terms) {
			it.prox = i
		}
		if !it.done {
			its = append(its, it)
		}
	}
	switch {
	case first != nil:
		return r.scoreAfter(first, its, top, prox)
	case r.record:
		r.record = false
		r.first = newFirstScores(clauses)
		return r.scoreAll(its, top, prox, r.first)
	case r.rk.exhaustive:
		return r.scoreAll(its, top, prox, nil)
	}
	return r.scorePruned(its, top, prox)
}

// scoreAll offers top every document of its (in clause order): the
// exhaustive merge scorePruned prunes. rec, when set, keeps every
// document's score.
func (r *ranker) scoreAll(its []*termIter, top *swap.TopK, prox *proximityClauses, rec *firstScores) (*swap.TopK, error) {
	for {
		doc, any := uint64(0), false
		for _, it := range its {
			if !it.done && (!any || it.cur.docID < doc) {
				doc, any = it.cur.docID, true
			}
		}
		if !any {
			return top, nil
		}
		score, docLen, nprox := 0.0, uint32(0), 0
		if prox != nil {
			clear(prox.tf)
		}
		for _, it := range its {
			if !it.done && it.cur.docID == doc {
				score += r.clauseScore(it.cl, &it.cur)
				if it.prox >= 0 {
					prox.tf[it.prox], docLen = it.cur.tf, it.cur.docLen
					nprox++
				}
				if err := it.advance(); err != nil {
					return nil, err
				}
			}
		}
		if rec != nil {
			rec.record(doc, score, docLen, nprox, prox)
		}
		h := swap.Hit{DocID: doc, Score: score}
		if nprox >= 2 && top.Admits(score, doc) {
			h.Bound = prox.weight * r.bm.ProximityBound(prox.tf, prox.weights, docLen, r.avgdl)
		}
		top.Offer(h)
	}
}

// messageContentField is the field number of Message.content.
var messageContentField = (&memoryv1.Message{}).ProtoReflect().Descriptor().Fields().ByName("content").Number()

// messageContent returns the content of an encoded Message (a
// swap_messages value) without decoding the rest: the proximity
// re-ranking reads many candidates and keeps few. As proto.Unmarshal, the
// last occurrence of the field wins.
func messageContent(v []byte) (string, error) {
	var content []byte
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		v = v[n:]
		if num == messageContentField && typ == protowire.BytesType {
			b, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return "", protowire.ParseError(n)
			}
			content, v = b, v[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, v)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		v = v[n:]
	}
	return string(content), nil
}
