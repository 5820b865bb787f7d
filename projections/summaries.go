package projections

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Archived L2 summaries are bm25 documents too, so a session's search and
// the context assembler can find what compression moved out of L2. They are
// indexed in a corpus of their own (summaryCorpus): their postings, df and
// statistics never mix with the messages', so a message search ranks
// exactly as before summaries were indexed, and a summary (a condensed
// paraphrase of many turns) is not scored against the statistics of single
// turns.

// SearchHit.kind of a message hit and of an archived summary's.
const (
	HitMessage = "message"
	HitSummary = "summary"
)

// MergeHits returns the hits of a and b by score, best first (a's first on
// a tie), at most limit of them: a session's message and summary hits in
// one ranking (both are BM25 scores of the same query and session, each in
// its own corpus).
func MergeHits(a, b []*memoryv1.SearchHit, limit int) []*memoryv1.SearchHit {
	out := make([]*memoryv1.SearchHit, 0, min(limit, len(a)+len(b)))
	for len(out) < limit && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && a[0].GetScore() >= b[0].GetScore()) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

// summaryDocMark is the msg_seq of a summary document in bm25_docs: no
// message sequence reaches it.
const summaryDocMark = math.MaxUint64

// summaryCorpusPrefix starts the user key of a summary corpus: 0x02 is not
// in the id alphabet, so no user's key can equal a summary corpus's.
const summaryCorpusPrefix = "\x02"

// summaryCorpus is the user key under which the archived summaries of
// userKey's sessions are indexed.
func summaryCorpus(userKey string) string { return summaryCorpusPrefix + userKey }

// summaryDocValue is the bm25_docs value of a summary document: its length,
// summaryDocMark, then its swap_summaries key (which starts with the
// session id, as parseDocValue expects).
func summaryDocValue(docLen uint32, key []byte) []byte {
	v := make([]byte, 0, 12+len(key))
	v = append(v, u32(docLen)...)
	v = append(v, u64(summaryDocMark)...)
	return append(v, key...)
}

// indexSummary adds archived summary sum of session sessionID (user userKey),
// stored at key, to the summary corpus: one document of its text's terms
// (no field terms: a summary has no speaker nor day of its own).
func (w *writer) indexSummary(userKey, sessionID string, sum *memoryv1.Summary, key []byte) error {
	tfs, docLen := swap.TermFreqs(sum.GetText())
	if docLen == 0 {
		return nil
	}
	docID, err := w.bDocs.NextSequence()
	if err != nil {
		return err
	}
	if err := w.bDocs.Put(u64(docID), summaryDocValue(docLen, key)); err != nil {
		return err
	}
	corpus := summaryCorpus(userKey)
	terms := w.pending.user(corpus)
	sess := w.pending.session(sessionID)
	for t, tf := range tfs {
		if strings.IndexByte(t, sep) >= 0 || isFieldTerm(t) {
			continue
		}
		w.pending.add(terms, corpus, t, posting{docID: docID, tf: tf, docLen: docLen, session: sess})
	}
	st := w.statsDelta[corpus]
	w.statsDelta[corpus] = [2]uint64{st[0] + 1, st[1] + uint64(docLen)}
	return nil
}

// archiveSummaries stores and indexes the summaries of an L2Archived.
func (w *writer) archiveSummaries(e *memoryv1.SessionIndexEntry, ev *memoryv1.L2Archived) error {
	for _, sum := range ev.GetSummaries() {
		v, err := marshalOpts.Marshal(sum)
		if err != nil {
			return err
		}
		key := swapSummaryKey(e.GetSessionId(), sum.GetFirstSeq(), sum.GetLastSeq(), sum.GetId())
		if err := w.bSummaries.Put(key, v); err != nil {
			return err
		}
		if err := w.indexSummary(e.GetUserId(), e.GetSessionId(), sum, key); err != nil {
			return err
		}
	}
	return nil
}

// unpostSummaries removes session id's summary documents from its user's
// summary corpus (before its swap_summaries rows are deleted: their texts
// give the terms).
func (w *writer) unpostSummaries(userKey, id string) error {
	terms := make(map[string]bool)
	p := prefix(id)
	c := w.bSummaries.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		sum := new(memoryv1.Summary)
		if err := proto.Unmarshal(v, sum); err != nil {
			return fmt.Errorf("stored summary %q: %w", k, err)
		}
		tfs, _ := swap.TermFreqs(sum.GetText())
		for t := range tfs {
			terms[t] = true
		}
	}
	if len(terms) == 0 {
		return nil
	}
	return w.unpost(summaryCorpus(userKey), id, terms)
}

// getSummaryDoc reads the summary of summary document value v.
func getSummaryDoc(b *bolt.Bucket, v []byte) (*memoryv1.Summary, error) {
	key := v[12:]
	raw := b.Get(key)
	if raw == nil {
		return nil, fmt.Errorf("projections: bm25 summary doc points to missing summary %q", key)
	}
	sum := new(memoryv1.Summary)
	if err := proto.Unmarshal(raw, sum); err != nil {
		return nil, fmt.Errorf("projections: stored summary %q: %w", key, err)
	}
	return sum, nil
}

// SearchSummaries ranks the archived L2 summaries of session sessionID
// against query (the message ranking, in the session's summary corpus) and
// returns at most limit hits (1..MaxCandidateLimit, 0 means 10), best
// first, each with Summary set and Message nil. A session without archived
// summaries, or unknown, has no hits.
func (s *Store) SearchSummaries(sessionID, query string, limit int) ([]*memoryv1.SearchHit, error) {
	rk := defaultRanking
	rk.summaries = true
	return s.searchVec(sessionID, memoryv1.SearchScope_SEARCH_SCOPE_SESSION, query, limit, rk, nil, nil)
}

// RecallSummaries returns the archived L2 summaries of a session, in
// message order: at most limit (1..MaxRecallLimit, 0 means
// DefaultRecallLimit) after skipping offset, and how many it has.
func (s *Store) RecallSummaries(sessionID string, offset, limit int) ([]*memoryv1.Summary, uint64, error) {
	if offset < 0 {
		return nil, 0, &ArgumentError{Field: "offset", Reason: "must be >= 0"}
	}
	limit, err := resolveLimit(limit, DefaultRecallLimit, MaxRecallLimit)
	if err != nil {
		return nil, 0, err
	}
	all, err := s.ArchivedSummaries(sessionID)
	if err != nil {
		return nil, 0, err
	}
	total := uint64(len(all))
	all = all[min(offset, len(all)):]
	return all[:min(limit, len(all))], total, nil
}

// SummaryAt returns archived summary id of session sessionID (a context's
// recalled archived summary); ok false when the projection does not hold
// it (erased, or on a failed read).
func (s *Store) SummaryAt(sessionID, id string) (*memoryv1.Summary, bool) {
	all, err := s.ArchivedSummaries(sessionID)
	if err != nil {
		return nil, false
	}
	for _, sum := range all {
		if sum.GetId() == id {
			return sum, true
		}
	}
	return nil, false
}
