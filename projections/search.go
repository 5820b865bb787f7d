package projections

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
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
	if w.preIndexed {
		if p := w.prep[m]; p == nil || p.docID != docID {
			return fmt.Errorf("rebuild: message %d got document %d, not the one indexed ahead", m.GetSeq(), docID)
		}
		return nil
	}
	terms := w.pending.user(userKey)
	sess := w.pending.session(sessionID)
	for _, t := range tfs {
		if strings.IndexByte(t.Term, sep) >= 0 || isFieldTerm(t.Term) {
			continue // cannot be a key component or a field; the analyzer never emits it
		}
		w.pending.add(terms, userKey, t.Term, posting{docID: docID, tf: t.TF, docLen: docLen, session: sess})
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
	group      uint32 // index of its group in bm25Pending.groups when added
}

// termGroup holds the postings of one bm25_terms key (user_key \x00 term)
// added in the transaction, in doc id order (documents are indexed in
// ascending doc id order, each term once per document).
type termGroup struct {
	key  []byte    // in bm25Pending's key arena
	user int       // the length of user_key in key
	n    int       // postings added
	list []posting // set by bm25Pending.group
}

// keyArena is the size of the chunks bm25Pending copies group keys into:
// one allocation per chunk instead of one per term.
const keyArena = 64 << 10

// postingPage is the number of postings of one page of bm25Pending.added:
// postings are appended to fixed pages, never copied to a larger array as
// they come (a Rebuild chunk buffers millions), and the pages are reused
// (postingPages).
const postingPage = 4096

// postingPages recycles the pages of bm25Pending.added.
var postingPages = sync.Pool{New: func() any { return new([postingPage]posting) }}

// bm25Pending buffers the postings of a transaction grouped by term key: the
// postings of a group are already in key order, so sorting the (far fewer)
// group keys sorts every posting, and a group's length is its df delta.
// Postings are appended to pages as they come and distributed to their
// groups once, by group (one allocation instead of a growing list per term).
type bm25Pending struct {
	users  map[string]map[string]int // user_key → term → index in groups
	groups []termGroup
	added  []*[postingPage]posting // in the order added, until group; the last is filled to n%postingPage
	n      int                     // postings buffered
	sorted bool                    // groups are grouped and sorted by key already (Rebuild's index stage)

	sessions   []string          // session ids of the buffered postings
	sessionIdx map[string]uint32 // session id → index in sessions

	arena []byte // the current chunk of group keys (never grown: a full one is replaced)
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
		p.groups = append(p.groups, termGroup{key: p.groupKey(userKey, term), user: len(userKey)})
	}
	p.groups[i].n++
	e.group = uint32(i)
	o := p.n % postingPage
	if o == 0 {
		p.added = append(p.added, postingPages.Get().(*[postingPage]posting))
	}
	p.added[len(p.added)-1][o] = e
	p.n++
}

// groupKey returns user_key \x00 term in the key arena.
func (p *bm25Pending) groupKey(userKey, term string) []byte {
	n := len(userKey) + 1 + len(term)
	if cap(p.arena)-len(p.arena) < n {
		p.arena = make([]byte, 0, max(n, keyArena))
	}
	o := len(p.arena)
	p.arena = append(append(append(p.arena, userKey...), sep), term...)
	return p.arena[o:len(p.arena):len(p.arena)]
}

// group sorts the groups by key and distributes the postings added to
// their lists (in the order added). The lists are laid out in one array in
// key order, so that flushBM25 reads the postings sequentially.
func (p *bm25Pending) group() {
	if p.sorted {
		return
	}
	order := sortGroups(p.groups, p.users)
	all := make([]posting, p.n)
	o := 0
	for _, ord := range order {
		g := &p.groups[ord.group]
		g.list = all[o:o:min(o+g.n, len(all))]
		o += g.n
	}
	for k, page := range p.added {
		for _, e := range page[:min(postingPage, p.n-k*postingPage)] {
			g := &p.groups[e.group]
			g.list = append(g.list, e)
		}
		postingPages.Put(page)
	}
	clear(p.added)
	p.added = p.added[:0]
	sorted := make([]termGroup, len(p.groups))
	for i, ord := range order {
		sorted[i] = p.groups[ord.group]
	}
	p.groups = sorted
	p.sorted = true
}

// groupOrder is what sortGroups sorts for a group: the rank of its user
// among the users and the first 16 bytes of its term, big-endian and
// padded with zeros (no term holds 0x00, so comparing them compares the
// terms' first 16 bytes), and its index. The sort compares integers and
// moves 24 bytes; only terms that share 16 bytes are compared in full.
type groupOrder struct {
	term0, term1 uint64
	user, group  uint32
}

// sortGroups returns the order of groups by key (each group's index in
// groups, in key order); users holds every user of groups.
func sortGroups(groups []termGroup, users map[string]map[string]int) []groupOrder {
	names := slices.Sorted(maps.Keys(users))
	rank := make(map[string]uint32, len(names))
	for i, u := range names {
		rank[u] = uint32(i)
	}
	order := make([]groupOrder, len(groups))
	for i := range groups {
		g := &groups[i]
		var pre [16]byte
		copy(pre[:], g.key[g.user+1:])
		order[i] = groupOrder{
			term0: binary.BigEndian.Uint64(pre[:8]), term1: binary.BigEndian.Uint64(pre[8:]),
			user: rank[string(g.key[:g.user])], group: uint32(i),
		}
	}
	slices.SortFunc(order, func(a, b groupOrder) int {
		switch {
		case a.user != b.user:
			return cmp.Compare(a.user, b.user)
		case a.term0 != b.term0:
			return cmp.Compare(a.term0, b.term0)
		case a.term1 != b.term1:
			return cmp.Compare(a.term1, b.term1)
		}
		return bytes.Compare(groups[a.group].key, groups[b.group].key)
	})
	return order
}

func (p *bm25Pending) reset() {
	clear(p.users)
	clear(p.groups) // drop the posting lists
	p.groups = p.groups[:0]
	for _, page := range p.added { // (group returned them already)
		postingPages.Put(page)
	}
	clear(p.added)
	p.added = p.added[:0]
	p.n, p.sorted = 0, false
	clear(p.sessionIdx)
	clear(p.sessions)
	p.sessions = p.sessions[:0]
	p.arena = nil // a new chunk for the next keys: none of a dropped group is ever overwritten
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
	p.group()
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
	stored, err := storedTerms(w.bTerms, p.groups, make([]storedTerm, 0, len(p.groups)))
	if err != nil {
		return err
	}
	var enc postingBlockWriter
	var kbuf []byte
	var outs []postingBlock
	for i := range p.groups {
		g := &p.groups[i]
		gk := g.key
		st := stored[i]
		df := st.df
		outs = outs[:0]
		// The stored inline blocks before the first new posting's block
		// stay as they are; one holding that block is extended.
		first := g.list[0].docID >> postingBlockShift
		var extend []byte
		for _, ib := range st.inline {
			switch {
			case ib.block < first:
				outs = append(outs, ib)
			case ib.block == first:
				extend = ib.v
			default:
				return fmt.Errorf("projections: term %q: new posting in block %d before its inline block %d", gk, first, ib.block)
			}
		}
		for j := 0; j < len(g.list); {
			blk := g.list[j].docID >> postingBlockShift
			enc.reset(blk)
			// Only the first block of the group can exist, and only if the
			// term already has documents.
			if j == 0 && df > 0 {
				if st.inline != nil {
					if extend != nil {
						if err := enc.resume(blk, extend); err != nil {
							return err
						}
					}
				} else if old := w.bPostings.Get(appendPostingKey(kbuf[:0], gk, blk)); old != nil {
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
			outs = append(outs, postingBlock{blk, keep(enc.buf)})
		}
		df += uint64(len(g.list))
		// The key, and the value below, in the slab: no allocation per term.
		tk := keep(gk)
		// A term with postings in bm25_postings has more than can be
		// inline: adding postings keeps it so.
		if (st.df == 0 || st.inline != nil) && inlineSize(outs) <= inlinePostingsMax {
			if err := w.bTerms.Put(tk, keep(appendTermValue(kbuf[:0], df, outs))); err != nil {
				return err
			}
			continue
		}
		for _, o := range outs {
			kbuf = appendPostingKey(kbuf[:0], tk, o.block)
			if err := w.bPostings.Put(keep(kbuf), o.v); err != nil {
				return err
			}
		}
		if err := w.bTerms.Put(tk, keep(binary.BigEndian.AppendUint64(kbuf[:0], df))); err != nil {
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

// storedTerm is a bm25_terms value read by storedTerms (inline blocks
// copied; nil when the postings are in bm25_postings).
type storedTerm struct {
	df     uint64
	inline []postingBlock
}

// storedTerms appends to dst the bm25_terms value of each of groups (sorted
// by key; df 0 when absent), read in one cursor walk: a key a few steps
// ahead is reached with Next, farther ones with Seek. Nothing is written to
// terms during the walk (a Put would invalidate the cursor).
func storedTerms(terms *bolt.Bucket, groups []termGroup, dst []storedTerm) ([]storedTerm, error) {
	const maxSteps = 8
	c := terms.Cursor()
	var k, v []byte
	if len(groups) > 0 {
		k, v = c.Seek(groups[0].key)
	}
	var arena []byte
	for i := range groups {
		key := groups[i].key
		for steps := 0; k != nil && bytes.Compare(k, key) < 0; steps++ {
			if steps == maxSteps {
				k, v = c.Seek(key)
				break
			}
			k, v = c.Next()
		}
		var st storedTerm
		if k != nil && bytes.Equal(k, key) {
			var err error
			if st.df, st.inline, err = parseTermValue(v, nil); err != nil {
				return nil, fmt.Errorf("term %q: %w", key, err)
			}
			for j := range st.inline {
				b := &st.inline[j]
				if cap(arena)-len(arena) < len(b.v) {
					arena = make([]byte, 0, 64<<10)
				}
				o := len(arena)
				arena = append(arena, b.v...)
				b.v = arena[o:len(arena):len(arena)]
			}
		}
		dst = append(dst, st)
	}
	return dst, nil
}
