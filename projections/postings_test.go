package projections

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestPostingBlockRoundTrip: encoding a block in one go, or in pieces
// resumed from the stored value, gives the same bytes, and decoding gives
// the postings back.
func TestPostingBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	const block = 5
	type post struct {
		doc        uint64
		tf, docLen uint32
		sid        string
	}
	var posts []post
	for d := uint64(block << postingBlockShift); d < (block+1)<<postingBlockShift; d++ {
		if rng.IntN(3) == 0 {
			continue
		}
		posts = append(posts, post{d, uint32(1 + rng.IntN(300)), uint32(1 + rng.IntN(100000)), fmt.Sprintf("sess-%d", rng.IntN(7))})
	}
	var whole postingBlockWriter
	whole.reset(block)
	for _, p := range posts {
		if err := whole.add(p.doc, p.tf, p.docLen, p.sid); err != nil {
			t.Fatal(err)
		}
	}
	var stored []byte
	for i := 0; i < len(posts); {
		var w postingBlockWriter
		if stored == nil {
			w.reset(block)
		} else if err := w.resume(block, stored); err != nil {
			t.Fatal(err)
		}
		for n := 1 + rng.IntN(9); n > 0 && i < len(posts); n-- {
			if err := w.add(posts[i].doc, posts[i].tf, posts[i].docLen, posts[i].sid); err != nil {
				t.Fatal(err)
			}
			i++
		}
		stored = append([]byte(nil), w.buf...)
	}
	if string(stored) != string(whole.buf) {
		t.Fatal("resumed encoding differs from one-pass encoding")
	}
	var r postingBlockReader
	r.reset(block, stored, []byte("sess-3"))
	for i := 0; ; i++ {
		p, ok, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if i != len(posts) {
				t.Fatalf("decoded %d postings, want %d", i, len(posts))
			}
			break
		}
		w := posts[i]
		if p.docID != w.doc || p.tf != w.tf || p.docLen != w.docLen || string(r.sessions[p.session]) != w.sid || p.match != (w.sid == "sess-3") {
			t.Fatalf("posting %d = %+v (session %q), want %+v", i, p, r.sessions[p.session], w)
		}
	}

	// Out of order or outside the block: refused.
	var w postingBlockWriter
	w.reset(block)
	if err := w.add(block<<postingBlockShift+3, 1, 1, "s"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []uint64{block<<postingBlockShift + 3, block<<postingBlockShift + 2, (block + 1) << postingBlockShift, 0} {
		if err := w.add(d, 1, 1, "s"); err == nil {
			t.Errorf("add(%d) accepted", d)
		}
	}
	// Malformed values: errors, never panics.
	for _, v := range [][]byte{{0x80}, {1, 1, 1}, {1, 1, 1, 9, 'a'}, {1, 1, 1, 2}, {1, 1, 1, 1, 1, 1, 1, 0}, {0xff, 1, 1, 0}} {
		var r postingBlockReader
		r.reset(block, v, nil)
		var err error
		for ok := true; ok && err == nil; {
			_, ok, err = r.next()
		}
		if err == nil {
			t.Errorf("value %x decoded without error", v)
		}
	}
}

// refSearch is exhaustive scoring computed from the messages alone
// (swap_messages, sessions): every document of the user (or session) scored
// clause by clause, in the ranker's clause order. rk is plainRanking (BM25
// of every query term, as Search did before posting blocks) or a ranking
// without proximity (stop words, speaker and day clauses): the first stage
// of the default ranking, which is exact.
func refSearch(t *testing.T, s *Store, sessionID string, scope memoryv1.SearchScope, query string, limit int, rk ranking) []swap.Hit {
	t.Helper()
	if rk.proximity != 0 || rk.idfFloor != 0 {
		t.Fatal("refSearch: no proximity, no idf floor")
	}
	var out []swap.Hit
	err := s.view(func(tx *bolt.Tx) error {
		entry, err := getSession(tx, sessionID)
		if err != nil || entry == nil {
			return err
		}
		user := entry.GetUserId()
		type doc struct {
			id       uint64
			sid      string
			tfs      map[string]uint32
			dl       uint32
			speakers []string
			day      swap.Day
		}
		var docs []doc
		var n, total uint64
		err = tx.Bucket(bucketBM25Docs).ForEach(func(k, v []byte) error {
			_, seq, sid, err := parseDocValue(v)
			if err != nil {
				return err
			}
			e, err := getSession(tx, sid)
			if err != nil {
				return err
			}
			if e.GetUserId() != user {
				return nil
			}
			m := new(memoryv1.Message)
			if err := proto.Unmarshal(tx.Bucket(bucketSwapMessages).Get(swapMessageKey(sid, seq)), m); err != nil {
				return err
			}
			tfs, dl := swap.TermFreqs(m.GetContent())
			n++
			total += uint64(dl)
			at := m.GetSaidUnixNano()
			if at == 0 {
				at = m.GetCreatedUnixNano()
			}
			docs = append(docs, doc{beU64(k), sid, tfs, dl, swap.QueryTerms(m.GetName()), swap.DayOf(at)})
			return nil
		})
		if err != nil || n == 0 {
			return err
		}
		q := swap.ParseQuery(query)
		if rk == plainRanking {
			q.Dates = nil
		}
		df := make(map[string]uint64)
		speakerDF := make(map[string]uint64)
		dayDF := make(map[swap.Day]uint64)
		for _, d := range docs {
			for tm := range d.tfs {
				df[tm]++
			}
			for _, sp := range d.speakers {
				speakerDF[sp]++
			}
			dayDF[d.day]++
		}
		bm := swap.DefaultBM25()
		// The clauses, in the ranker's order: content terms, speaker
		// terms, days.
		other := false
		var terms, speakers []string
		for _, qt := range q.Terms {
			if strings.Contains(qt.Term, "\x00") {
				continue
			}
			if df[qt.Term] > 0 {
				other = other || !qt.Stop
			}
			if rk.speaker > 0 && speakerDF[qt.Term] > 0 {
				speakers = append(speakers, qt.Term)
				other = true
			}
		}
		type dayClause struct {
			r   swap.DayRange
			idf float64
		}
		var days []dayClause
		for _, r := range q.Dates {
			var sum uint64
			for d := r.First; d <= r.Last; d++ {
				sum += dayDF[d]
			}
			if rk.dates > 0 && sum > 0 {
				days = append(days, dayClause{r, bm.IDF(n, sum)})
				other = true
			}
		}
		for _, qt := range q.Terms {
			if df[qt.Term] > 0 && !strings.Contains(qt.Term, "\x00") && !(rk.dropStop && other && qt.Stop) {
				terms = append(terms, qt.Term)
			}
		}
		avgdl := float64(total) / float64(n)
		top := swap.NewTopK(limit)
		for _, d := range docs {
			if (scope != scopeUser || user == "") && d.sid != sessionID {
				continue
			}
			score, hit := 0.0, false
			for _, tm := range terms {
				if tf := d.tfs[tm]; tf > 0 {
					score += bm.TermScore(tf, d.dl, avgdl, bm.IDF(n, df[tm]))
					hit = true
				}
			}
			for _, sp := range speakers {
				if slices.Contains(d.speakers, sp) {
					score += rk.speaker * bm.IDF(n, speakerDF[sp])
					hit = true
				}
			}
			for _, dc := range days {
				if dc.r.First <= d.day && d.day <= dc.r.Last {
					score += rk.dates * dc.idf
					hit = true
				}
			}
			if hit {
				top.Offer(swap.Hit{DocID: d.id, Score: score})
			}
		}
		out = top.Sorted()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var exhaustiveExtras = []string{"what did", "alice", "bob", "stone", "on 8 May 2023", "in June 2023", "2023-05-31", "you"}

// exhaustiveQuery returns a random query of the exhaustive tests.
func exhaustiveQuery(rng *rand.Rand) string {
	q := benchWords[rng.IntN(len(benchWords))]
	for j := rng.IntN(4); j > 0; j-- {
		q += " " + benchWords[rng.IntN(len(benchWords))]
	}
	if rng.IntN(5) == 0 {
		q += fmt.Sprintf(" %s%d", benchWords[rng.IntN(len(benchWords))], rng.IntN(5000))
	}
	if rng.IntN(2) == 0 {
		q = exhaustiveExtras[rng.IntN(len(exhaustiveExtras))] + " " + q
	}
	if rng.IntN(8) == 0 {
		q = exhaustiveExtras[rng.IntN(len(exhaustiveExtras))]
	}
	return q
}

// exhaustiveCorpus builds the corpus of TestSearchMatchesExhaustive.
func exhaustiveCorpus(t *testing.T) (*Store, []string, *rand.Rand) {
	rng := rand.New(rand.NewPCG(5, 5))
	l := newLogBuilder(t)
	var sessions []string
	for i := 0; i < 12; i++ {
		sid := fmt.Sprintf("s%02d", i)
		sessions = append(sessions, sid)
		l.create(sid, []string{"u0", "u1", "u2", ""}[i%4], "")
	}
	names := []string{"", "", "Alice", "Bob Stone", "Stone"}
	s := openTestStore(t)
	for i := 0; i < 900; i++ {
		sid := sessions[rng.IntN(len(sessions))]
		texts := make([]string, 1+rng.IntN(3))
		for j := range texts {
			texts[j] = benchText(rng)
			if rng.IntN(3) == 0 {
				texts[j] = "what did you " + texts[j]
			}
		}
		ev := l.msgs(sid, texts...)
		for _, m := range ev.Messages {
			m.Name = names[rng.IntN(len(names))]
			if rng.IntN(2) == 0 {
				m.SaidUnixNano = time.Date(2023, 5, 1+rng.IntN(40), rng.IntN(24), 0, 0, 0, time.UTC).UnixNano()
			}
		}
		l.add(sid, ev)
		if len(l.recs) >= 1+rng.IntN(40) {
			mustApply(t, s, l.recs)
			l.recs = l.recs[:0]
		}
	}
	mustApply(t, s, l.recs)
	var blocks int
	_ = s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBM25Postings).ForEach(func(k, _ []byte) error {
			if beU64(k[len(k)-8:]) > 0 {
				blocks++
			}
			return nil
		})
	})
	if blocks == 0 {
		t.Fatal("corpus within one posting block")
	}
	return s, sessions, rng
}

// TestSearchMatchesExhaustive: over a corpus spanning many posting blocks,
// built by many small transactions (every block appended to several times),
// with named speakers and messages said on several days, the ranker
// returns exactly the hits and scores of exhaustive scoring, in both
// scopes, for one- to four-term queries (repeated terms, stop words, names
// and dates included): plain BM25, and the default ranking without the
// parts that re-rank the best candidates (proximity, recency, dedupe,
// questions: TestSearchProximitySkipsExactly and search_test.go check
// them).
func TestSearchMatchesExhaustive(t *testing.T) {
	s, sessions, rng := exhaustiveCorpus(t)
	stage1 := defaultRanking
	stage1.proximity, stage1.recency, stage1.dedupe, stage1.question = 0, 0, false, 0
	differ := 0 // queries the two rankings answer differently
	for i := 0; i < 400; i++ {
		q := exhaustiveQuery(rng)
		sid := sessions[rng.IntN(len(sessions))]
		scope := []memoryv1.SearchScope{scopeUser, scopeSession}[rng.IntN(2)]
		limit := 1 + rng.IntN(MaxSearchLimit)
		var first []*memoryv1.SearchHit
		for _, rk := range []ranking{plainRanking, stage1} {
			hits, err := s.search(sid, scope, q, limit, rk)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = hits
			} else if !slices.EqualFunc(first, hits, func(a, b *memoryv1.SearchHit) bool { return a.GetScore() == b.GetScore() }) {
				differ++
			}
			want := refSearch(t, s, sid, scope, q, limit, rk)
			if len(hits) != len(want) {
				t.Fatalf("search(%s, %v, %q, %d, %+v): %d hits, want %d", sid, scope, q, limit, rk, len(hits), len(want))
			}
			for j, h := range hits {
				var docID uint64
				_ = s.view(func(tx *bolt.Tx) error {
					_, seq, dsid, _ := parseDocValue(tx.Bucket(bucketBM25Docs).Get(u64(want[j].DocID)))
					if dsid != h.GetSessionId() || seq != h.GetMessage().GetSeq() {
						docID = 0
					} else {
						docID = want[j].DocID
					}
					return nil
				})
				if docID == 0 || h.GetScore() != want[j].Score {
					t.Fatalf("search(%s, %v, %q, %d, %+v) hit %d = %s/%d %v, want doc %d %v",
						sid, scope, q, limit, rk, j, h.GetSessionId(), h.GetMessage().GetSeq(), h.GetScore(), want[j].DocID, want[j].Score)
				}
			}
		}
	}
	if differ < 100 {
		t.Fatalf("only %d of 400 queries ranked differently by the two rankings: the corpus does not exercise them", differ)
	}
	// Plain is what SearchWith(Plain) runs.
	a, _ := s.SearchWith("s01", scopeUser, "what did you deploy", 10, SearchOptions{Plain: true})
	b, _ := s.search("s01", scopeUser, "what did you deploy", 10, plainRanking)
	if len(a) != len(b) || len(a) == 0 || a[0].GetScore() != b[0].GetScore() {
		t.Fatalf("SearchWith(Plain) = %d hits, search(plainRanking) = %d", len(a), len(b))
	}
}

// TestSearchProximitySkipsExactly: skipping the candidates whose bound
// (proximity bound, recency boost) cannot lift them into the hits changes
// nothing, duplicates dropped included: the same hits and scores as
// re-ranking all RerankDepth candidates, over the exhaustive corpus (both
// scopes, every limit).
func TestSearchProximitySkipsExactly(t *testing.T) {
	s, sessions, rng := exhaustiveCorpus(t)
	all := defaultRanking
	all.readAll = true
	for i := 0; i < 400; i++ {
		q := exhaustiveQuery(rng)
		sid := sessions[rng.IntN(len(sessions))]
		scope := []memoryv1.SearchScope{scopeUser, scopeSession}[rng.IntN(2)]
		limit := 1 + rng.IntN(MaxSearchLimit)
		got, err := s.search(sid, scope, q, limit, defaultRanking)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.search(sid, scope, q, limit, all)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b *memoryv1.SearchHit) bool {
			return a.GetSessionId() == b.GetSessionId() && a.GetMessage().GetSeq() == b.GetMessage().GetSeq() && a.GetScore() == b.GetScore()
		}) {
			t.Fatalf("search(%s, %v, %q, %d): %v, reading all: %v", sid, scope, q, limit, hitIDs(got), hitIDs(want))
		}
	}
}

// TestStoredDFWalk checks the cursor walk of storedTerms against a Get per key,
// for group lists that hit stored keys a step apart, many steps apart and
// between them, and keys before the first and after the last stored one.
func TestStoredDFWalk(t *testing.T) {
	s := openTestStore(t)
	rng := rand.New(rand.NewPCG(3, 3))
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBM25Terms)
		for i := 0; i < 2000; i += 1 + rng.IntN(3) {
			if err := b.Put(termKey("u", fmt.Sprintf("t%05d", i)), u64(uint64(i+1))); err != nil {
				return err
			}
		}
		for round := 0; round < 50; round++ {
			var groups []termGroup
			for i := -5; i < 2010; i += 1 + rng.IntN(1+round*4) {
				groups = append(groups, termGroup{key: termKey("u", fmt.Sprintf("t%05d", i))})
			}
			got, err := storedTerms(b, groups, nil)
			if err != nil {
				return err
			}
			for i, g := range groups {
				if want := termDF(b, g.key); got[i].df != want {
					t.Fatalf("round %d: df of %q = %d, Get says %d", round, g.key, got[i].df, want)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGroupSortsByKey: bm25Pending.group orders the groups by their
// bm25_terms key (bytes), whatever the users (anonymous, a summary corpus)
// and terms (field terms, terms sharing 16 bytes or more, terms that are
// prefixes of others, non-ASCII), and keeps every group with its postings.
func TestGroupSortsByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	users := []string{"", "u1", "u10", "u2", summaryCorpus("u1"), summaryCorpus(""), "a-very-long-user-id_0123456789"}
	stems := []string{"a", "ab", "abcdefghijklmnop", "abcdefghijklmnopq", "abcdefghijklmnopqr", "abcdefgh", "abcdefghi",
		"zeta", "é", "éa", "日本語", speakerTerm("ann"), speakerTerm("anne"), dayTerm(swap.DayOf(baseTime))}
	for round := range 20 {
		var p bm25Pending
		want := map[string]int{}
		for i := range 200 + round*50 {
			u := users[rng.IntN(len(users))]
			term := stems[rng.IntN(len(stems))]
			if rng.IntN(2) == 0 {
				term += fmt.Sprint(rng.IntN(300))
			}
			p.add(p.user(u), u, term, posting{docID: uint64(i + 1), tf: 1, docLen: 1})
			want[string(termKey(u, term))]++
		}
		p.group()
		if len(p.groups) != len(want) {
			t.Fatalf("round %d: %d groups, want %d", round, len(p.groups), len(want))
		}
		for i, g := range p.groups {
			if i > 0 && bytes.Compare(p.groups[i-1].key, g.key) >= 0 {
				t.Fatalf("round %d: group %q after %q", round, g.key, p.groups[i-1].key)
			}
			if len(g.list) != want[string(g.key)] || len(g.list) != g.n {
				t.Fatalf("round %d: group %q holds %d postings, want %d", round, g.key, len(g.list), want[string(g.key)])
			}
			for j := 1; j < len(g.list); j++ {
				if g.list[j].docID <= g.list[j-1].docID {
					t.Fatalf("round %d: group %q: postings out of doc order", round, g.key)
				}
			}
		}
		p.reset()
	}
}
