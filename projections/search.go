package projections

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Search limits: limit 1..MaxSearchLimit, 0 means DefaultSearchLimit.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 20
)

// index adds message m of session sessionID (user userKey) to the BM25 index:
// one document per message with indexable text. A message without any term
// (empty content, only punctuation) is not a document: it can never match.
//
// The document is written at once (doc ids are ascending: an append); its
// postings are buffered per bm25_terms key and written by flushBM25 in key
// order. Inserting them here, term by term and document by document, puts
// keys in random order into the B-tree and was the bulk of the cost of a
// transaction (and of Rebuild).
func (w *writer) index(userKey, sessionID string, m *memoryv1.Message) error {
	tfs, docLen := w.termFreqs(m)
	if docLen == 0 {
		return nil
	}
	docID, err := w.bDocs.NextSequence()
	if err != nil {
		return err
	}
	if err := w.bDocs.Put(u64(docID), docValue(docLen, m.GetSeq(), sessionID)); err != nil {
		return err
	}
	terms := w.pending.user(userKey)
	sess := w.pending.session(sessionID)
	for t, tf := range tfs {
		if strings.IndexByte(t, sep) >= 0 || isFieldTerm(t) {
			continue // cannot be a key component or a field; the analyzer never emits it
		}
		w.pending.add(terms, userKey, t, posting{docID: docID, tf: tf, docLen: docLen, session: sess})
	}
	for _, t := range w.fieldTerms(m) {
		w.pending.add(terms, userKey, t, posting{docID: docID, tf: 1, docLen: docLen, session: sess})
	}
	st := w.statsDelta[userKey]
	w.statsDelta[userKey] = [2]uint64{st[0] + 1, st[1] + uint64(docLen)}
	return nil
}

// fieldTerms returns the field terms of m (schema.go): its speaker's name
// terms and the day it was said.
func fieldTerms(m *memoryv1.Message) []string {
	var out []string
	if name := m.GetName(); name != "" {
		for _, t := range swap.QueryTerms(name) {
			if strings.IndexByte(t, sep) < 0 {
				out = append(out, speakerTerm(t))
			}
		}
	}
	if at := saidAt(m); at > 0 {
		out = append(out, dayTerm(swap.DayOf(at)))
	}
	return out
}

// saidAt is when m was said: said_unix_nano, or created_unix_nano when the
// writer did not say.
func saidAt(m *memoryv1.Message) int64 {
	if t := m.GetSaidUnixNano(); t != 0 {
		return t
	}
	return m.GetCreatedUnixNano()
}

// posting is one buffered posting of a term; session indexes
// bm25Pending.sessions (no pointer: the garbage collector does not scan the
// millions of postings a Rebuild chunk buffers).
type posting struct {
	docID      uint64
	tf, docLen uint32
	session    uint32
}

// termGroup holds the postings of one bm25_terms key (user_key \x00 term)
// added in the transaction, in doc id order (documents are indexed in
// ascending doc id order, each term once per document).
type termGroup struct {
	key  string
	list []posting
}

// bm25Pending buffers the postings of a transaction grouped by term key: the
// postings of a group are already in key order, so sorting the (far fewer)
// group keys sorts every posting, and a group's length is its df delta.
type bm25Pending struct {
	users  map[string]map[string]int // user_key → term → index in groups
	groups []termGroup
	n      int // postings buffered

	sessions   []string          // session ids of the buffered postings
	sessionIdx map[string]uint32 // session id → index in sessions
}

// session returns the index of sessionID in p.sessions, adding it.
func (p *bm25Pending) session(sessionID string) uint32 {
	if i, ok := p.sessionIdx[sessionID]; ok {
		return i
	}
	if p.sessionIdx == nil {
		p.sessionIdx = make(map[string]uint32)
	}
	i := uint32(len(p.sessions))
	p.sessions = append(p.sessions, sessionID)
	p.sessionIdx[sessionID] = i
	return i
}

// user returns the term index of userKey, for add.
func (p *bm25Pending) user(userKey string) map[string]int {
	terms := p.users[userKey]
	if terms == nil {
		if p.users == nil {
			p.users = make(map[string]map[string]int)
		}
		terms = make(map[string]int)
		p.users[userKey] = terms
	}
	return terms
}

// add buffers posting e of term for userKey; terms is p.user(userKey).
func (p *bm25Pending) add(terms map[string]int, userKey, term string, e posting) {
	i, ok := terms[term]
	if !ok {
		i = len(p.groups)
		terms[term] = i
		p.groups = append(p.groups, termGroup{key: string(termKey(userKey, term))})
	}
	g := &p.groups[i]
	g.list = append(g.list, e)
	p.n++
}

func (p *bm25Pending) reset() {
	clear(p.users)
	clear(p.groups) // drop the posting lists
	p.groups = p.groups[:0]
	p.n = 0
	clear(p.sessionIdx)
	clear(p.sessions)
	p.sessions = p.sessions[:0]
}

// flushBM25 writes the postings buffered by index, then adds the document
// frequencies and collection statistics to their buckets, every bucket in
// key order (once per key and transaction). Postings are written as blocks
// (bucketBM25Postings): the first block of a term's new postings may already
// hold earlier postings (doc ids grow, so only a term's last stored block
// can) and is read, extended and written back; every later block is new.
// Block boundaries depend on doc ids only, so the bytes written do not
// depend on how the log was cut into transactions.
func (w *writer) flushBM25() error {
	p := &w.pending
	slices.SortFunc(p.groups, func(a, b termGroup) int { return strings.Compare(a.key, b.key) })
	// bbolt keeps the slices given to Put until the commit: keys and values
	// are copied into slabs that are never reused within the transaction.
	var slab []byte
	keep := func(b []byte) []byte {
		if cap(slab)-len(slab) < len(b) {
			slab = make([]byte, 0, max(len(b), 1<<20))
		}
		o := len(slab)
		slab = append(slab, b...)
		return slab[o:len(slab):len(slab)]
	}
	var enc postingBlockWriter
	var kbuf []byte
	for i := range p.groups {
		g := &p.groups[i]
		tk := []byte(g.key)
		df := getU64(w.bTerms, tk)
		for j := 0; j < len(g.list); {
			blk := g.list[j].docID >> postingBlockShift
			kbuf = appendPostingKey(kbuf[:0], g.key, blk)
			enc.reset(blk)
			// Only the first block of the group can exist, and only if the
			// term already has documents.
			if j == 0 && df > 0 {
				if old := w.bPostings.Get(kbuf); old != nil {
					if err := enc.resume(blk, old); err != nil {
						return err
					}
				}
			}
			for ; j < len(g.list) && g.list[j].docID>>postingBlockShift == blk; j++ {
				e := &g.list[j]
				if err := enc.add(e.docID, e.tf, e.docLen, p.sessions[e.session]); err != nil {
					return err
				}
			}
			if err := w.bPostings.Put(keep(kbuf), keep(enc.buf)); err != nil {
				return err
			}
		}
		if err := w.bTerms.Put(tk, u64(df+uint64(len(g.list)))); err != nil {
			return err
		}
	}
	p.reset()
	for _, userKey := range slices.Sorted(maps.Keys(w.statsDelta)) {
		d := w.statsDelta[userKey]
		docs, total := parseStatsValue(w.bStats.Get(statsKey(userKey)))
		if err := w.bStats.Put(statsKey(userKey), statsValue(docs+d[0], total+d[1])); err != nil {
			return err
		}
	}
	clear(w.statsDelta)
	return nil
}

// Search ranks the messages of session sessionID (scope SESSION or
// UNSPECIFIED) or of every session of its user (scope USER) against query
// with BM25 (swap.DefaultBM25) and returns at most limit hits, best first
// (ties: older document first). limit is 1..20, 0 means 10.
//
// Any query string is accepted: there is no query syntax, punctuation only
// separates words, so `customer-id`, `O'Brien`, `"unbalanced` or `*` are
// plain text. A query without any term, or a session the projection does not
// know (yet), returns no hits and no error.
//
// idf and avgdl are the statistics of the user's corpus in both scopes. A
// session without a user is searched in SESSION scope even when USER is
// asked: anonymous sessions do not share a user.
func (s *Store) Search(sessionID string, scope memoryv1.SearchScope, query string, limit int) ([]*memoryv1.SearchHit, error) {
	limit, err := resolveLimit(limit, DefaultSearchLimit, MaxSearchLimit)
	if err != nil {
		return nil, err
	}
	if scope != memoryv1.SearchScope_SEARCH_SCOPE_UNSPECIFIED && scope != memoryv1.SearchScope_SEARCH_SCOPE_SESSION &&
		scope != memoryv1.SearchScope_SEARCH_SCOPE_USER {
		return nil, &ArgumentError{Field: "scope", Reason: fmt.Sprintf("unknown scope %d", scope)}
	}
	terms := swap.QueryTerms(query)
	if len(terms) == 0 {
		return []*memoryv1.SearchHit{}, nil
	}
	hits := []*memoryv1.SearchHit{}
	err = s.view(func(tx *bolt.Tx) error {
		entry, err := getSession(tx, sessionID)
		if err != nil || entry == nil {
			return err
		}
		userKey := entry.GetUserId()
		var filter []byte // session filter; nil = every session of the user
		if scope != memoryv1.SearchScope_SEARCH_SCOPE_USER || userKey == "" {
			filter = []byte(sessionID)
		}
		n, total := parseStatsValue(tx.Bucket(bucketBM25Stats).Get(statsKey(userKey)))
		if n == 0 {
			return nil
		}
		avgdl := float64(total) / float64(n)
		top, err := scoreTerms(tx.Bucket(bucketBM25Postings), userKey, knownTerms(tx.Bucket(bucketBM25Terms), userKey, terms),
			filter, n, avgdl, limit)
		if err != nil {
			return err
		}
		docs := tx.Bucket(bucketBM25Docs)
		msgs := tx.Bucket(bucketSwapMessages)
		for _, h := range top.Sorted() {
			_, seq, sid, err := parseDocValue(docs.Get(u64(h.DocID)))
			if err != nil {
				return err
			}
			m, err := getMessage(msgs, sid, seq)
			if err != nil {
				return err
			}
			if m == nil {
				return fmt.Errorf("projections: bm25 doc %d points to missing message %s/%d", h.DocID, sid, seq)
			}
			hits = append(hits, &memoryv1.SearchHit{SessionId: sid, Message: m, Score: h.Score})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}

// termIter walks the postings of one query term, block by block (a prefix
// cursor over the term's blocks, each value decoded sequentially), skipping
// the postings of other sessions when a session filter is set.
type termIter struct {
	c      *bolt.Cursor
	prefix []byte
	filter []byte
	idf    float64
	r      postingBlockReader
	cur    blockPosting
	done   bool
}

func newTermIter(b *bolt.Bucket, userKey, term string, filter []byte, idf float64) (*termIter, error) {
	it := &termIter{c: b.Cursor(), prefix: postingPrefix(userKey, term), filter: filter, idf: idf}
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
			if err := it.load(it.c.Next()); err != nil {
				return err
			}
			continue
		}
		if it.filter != nil && !p.match {
			continue
		}
		it.cur = p
		return nil
	}
	return nil
}

// scoreTerms scores every document holding at least one of terms (of
// session filter, if not nil) and returns the best limit. The term lists are
// merged in doc id order (document at a time), so no per-document map is
// needed; a document's score is the sum of its terms' scores in the order
// of terms, the same float operations as accumulating term by term.
func scoreTerms(b *bolt.Bucket, userKey string, terms []termDF, filter []byte, n uint64, avgdl float64, limit int) (*swap.TopK, error) {
	bm := swap.DefaultBM25()
	its := make([]*termIter, 0, len(terms))
	for _, t := range terms {
		it, err := newTermIter(b, userKey, t.term, filter, bm.IDF(n, t.df))
		if err != nil {
			return nil, err
		}
		if !it.done {
			its = append(its, it)
		}
	}
	top := swap.NewTopK(limit)
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
		score := 0.0
		for _, it := range its {
			if !it.done && it.cur.docID == doc {
				score += bm.TermScore(it.cur.tf, it.cur.docLen, avgdl, it.idf)
				if err := it.advance(); err != nil {
					return nil, err
				}
			}
		}
		top.Offer(swap.Hit{DocID: doc, Score: score})
	}
}

type termDF struct {
	term string
	df   uint64
}

// knownTerms returns the query terms present in userKey's corpus with their
// document frequency.
func knownTerms(b *bolt.Bucket, userKey string, terms []string) []termDF {
	out := make([]termDF, 0, len(terms))
	for _, t := range terms {
		if strings.IndexByte(t, sep) >= 0 {
			continue
		}
		if df := getU64(b, termKey(userKey, t)); df > 0 {
			out = append(out, termDF{term: t, df: df})
		}
	}
	return out
}
