package projections

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// pruneVocab is the vocabulary of pruneCorpus: word i is drawn with a
// Zipf-like frequency (low i common, high i rare).
func pruneVocab() []string {
	var out []string
	for i := 0; i < 600; i++ {
		out = append(out, fmt.Sprintf("w%sx", strings.Repeat(string(rune('a'+i%26)), 1+i/26)))
	}
	return out
}

func pruneWord(rng *rand.Rand, vocab []string) string {
	// min of three uniforms: strongly skewed to the low (common) words.
	return vocab[min(rng.IntN(len(vocab)), rng.IntN(len(vocab)), rng.IntN(len(vocab)))]
}

// pruneCorpus: three users and sessions without a user, with long
// histories (~9,000 messages) of common and rare words, speakers, days
// said, questions and repeated texts.
func pruneCorpus(t *testing.T) (*Store, []string, []string) {
	rng := rand.New(rand.NewPCG(11, 11))
	vocab := pruneVocab()
	l := newLogBuilder(t)
	var sessions []string
	for i := 0; i < 16; i++ {
		sid := fmt.Sprintf("s%02d", i)
		sessions = append(sessions, sid)
		l.create(sid, []string{"u0", "u1", "u2", ""}[i%4], "")
	}
	names := []string{"", "", "Alice", "Bob Stone", "Stone"}
	s := openTestStore(t)
	var texts []string
	for i := 0; i < 3000; i++ {
		sid := sessions[rng.IntN(len(sessions))]
		batch := make([]string, 1+rng.IntN(5))
		for j := range batch {
			switch {
			case len(texts) > 0 && rng.IntN(15) == 0:
				batch[j] = strings.ToUpper(texts[rng.IntN(len(texts))]) // a repeated text
			default:
				n := 1 + rng.IntN(25)
				ws := make([]string, n)
				for k := range ws {
					ws[k] = pruneWord(rng, vocab)
				}
				batch[j] = strings.Join(ws, " ")
				if rng.IntN(4) == 0 {
					batch[j] += "?"
				}
				texts = append(texts, batch[j])
			}
		}
		ev := l.msgs(sid, batch...)
		for _, m := range ev.Messages {
			m.Name = names[rng.IntN(len(names))]
			if rng.IntN(2) == 0 {
				m.SaidUnixNano = time.Date(2023, 5, 1+rng.IntN(40), rng.IntN(24), 0, 0, 0, time.UTC).UnixNano()
			}
		}
		l.add(sid, ev)
		if len(l.recs) >= 1+rng.IntN(60) {
			mustApply(t, s, l.recs)
			l.recs = l.recs[:0]
		}
	}
	mustApply(t, s, l.recs)
	return s, sessions, vocab
}

// pruneQuery draws a query: words common and rare, sometimes a stop word,
// a speaker, a day, a question.
func pruneQuery(rng *rand.Rand, vocab []string) string {
	var ws []string
	for j := 1 + rng.IntN(8); j > 0; j-- {
		switch rng.IntN(6) {
		case 0:
			ws = append(ws, vocab[rng.IntN(len(vocab))]) // uniform: often rare
		case 1:
			ws = append(ws, []string{"what", "did", "the", "you", "Alice", "Stone", "bob"}[rng.IntN(7)])
		default:
			ws = append(ws, pruneWord(rng, vocab))
		}
	}
	if rng.IntN(4) == 0 {
		ws = append(ws, []string{"on 8 May 2023", "May 2023", "2023-05-20", "in June 2023"}[rng.IntN(4)])
	}
	q := strings.Join(ws, " ")
	if rng.IntN(3) == 0 {
		q += "?"
	}
	return q
}

type pruneCase struct {
	sid    string
	scope  memoryv1.SearchScope
	query  string
	limit  int
	rk     ranking
	corpus *Corpus
}

func (c pruneCase) String() string {
	return fmt.Sprintf("search(%s, %v, %q, %d, corpus %+v, plain %v)", c.sid, c.scope, c.query, c.limit, c.corpus, c.rk == plainRanking)
}

// pruneCases draws n searches over pruneCorpus: both scopes, corpus
// searches with except, feedback, replies and the fill, plain and default
// rankings, limits from 1 to MaxCandidateLimit.
func pruneCases(rng *rand.Rand, n int, sessions, vocab []string) []pruneCase {
	var out []pruneCase
	for range n {
		c := pruneCase{
			sid:   sessions[rng.IntN(len(sessions))],
			scope: []memoryv1.SearchScope{scopeUser, scopeSession}[rng.IntN(2)],
			query: pruneQuery(rng, vocab),
			limit: []int{1, 3, 10, 20, 50, 400}[rng.IntN(6)],
			rk:    defaultRanking,
		}
		if rng.IntN(5) == 0 {
			c.rk = plainRanking
		}
		if rng.IntN(2) == 0 {
			user := []string{"u0", "u1", "u2", ""}[rng.IntN(4)]
			c.corpus = &Corpus{User: user, Feedback: rng.IntN(3) > 0, Replies: rng.IntN(2) == 0, Fill: rng.IntN(3) == 0}
			if rng.IntN(3) > 0 {
				c.corpus.Except = c.sid
			}
			c.scope = scopeUser
		}
		out = append(out, c)
	}
	return out
}

// pruneMismatch runs c pruned and exhaustively and describes the first
// difference ("" when the hits are the same: sessions, messages, kinds,
// scores to the bit).
func pruneMismatch(t *testing.T, s *Store, c pruneCase) string {
	got, err := s.searchVec(c.sid, c.scope, c.query, c.limit, c.rk, nil, c.corpus)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	ex := c.rk
	ex.exhaustive = true
	want, err := s.searchVec(c.sid, c.scope, c.query, c.limit, ex, nil, c.corpus)
	if err != nil {
		t.Fatalf("%v exhaustive: %v", c, err)
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d hits, exhaustively %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.GetSessionId() != w.GetSessionId() || g.GetMessage().GetSeq() != w.GetMessage().GetSeq() || g.GetKind() != w.GetKind() ||
			math.Float64bits(g.GetScore()) != math.Float64bits(w.GetScore()) || g.GetMessage().GetContent() != w.GetMessage().GetContent() {
			return fmt.Sprintf("hit %d: %s/%d %v (%x), exhaustively %s/%d %v (%x)", i, g.GetSessionId(), g.GetMessage().GetSeq(), g.GetScore(),
				math.Float64bits(g.GetScore()), w.GetSessionId(), w.GetMessage().GetSeq(), w.GetScore(), math.Float64bits(w.GetScore()))
		}
	}
	return ""
}

// TestSearchPrunedMatchesExhaustive: the pruned search (MaxScore over the
// first stage, the first ranking of a feedback search settling only the
// hits lending their terms) returns what the exhaustive one returns — the
// same hits in the same order with the same scores to the bit — for
// random queries over long histories of several users, in both scopes,
// with and without except, feedback, replies and fill, plain and default
// rankings, limits 1 to 400, documents ordered by id (one log stream) and
// by age (partitions).
func TestSearchPrunedMatchesExhaustive(t *testing.T) {
	s, sessions, vocab := pruneCorpus(t)
	rng := rand.New(rand.NewPCG(12, 12))
	for _, parts := range []int64{1, testLogPartitions} {
		s.logPartitions.Store(parts)
		for _, c := range pruneCases(rng, 300, sessions, vocab) {
			if d := pruneMismatch(t, s, c); d != "" {
				t.Fatalf("partitions %d, %v: %s", parts, c, d)
			}
		}
	}
	s.logPartitions.Store(1)
}

// TestSearchPruneBrokenBoundDetected: with the bounds of the pruning
// broken on purpose (a third of their value: no longer bounds), the
// comparison above finds hits that differ; it would catch a pruning that
// drops a true hit.
func TestSearchPruneBrokenBoundDetected(t *testing.T) {
	s, sessions, vocab := pruneCorpus(t)
	defer func(v float64) { pruneSlack = v }(pruneSlack)
	pruneSlack = 1.0 / 3
	rng := rand.New(rand.NewPCG(12, 12))
	differ := 0
	for _, c := range pruneCases(rng, 100, sessions, vocab) {
		if pruneMismatch(t, s, c) != "" {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("bounds a third of their value changed no search: the comparison does not exercise the pruning")
	}
	t.Logf("%d of 100 searches differ with broken bounds", differ)
}

// TestTextKeyFast: textKey's (and dedupeKey's) ASCII pass gives what
// lower-casing, splitting on white space and joining gives, for ASCII and
// other texts.
func TestTextKeyFast(t *testing.T) {
	slow := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	alphabet := []string{"a", "Z", "q", " ", "  ", "\t", "\n", "\v", "\f", "\r", "x1", "É", "é", "\u00a0", "\u0085", "İ", "?", "\x00", "\xff"}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for j := rng.IntN(12); j > 0; j-- {
			w := alphabet[rng.IntN(len(alphabet))]
			if i%2 == 0 && w[0] >= 0x80 {
				w = "M" // half the texts ASCII
			}
			b.WriteString(w)
		}
		if got, want := textKey(b.String()), slow(b.String()); got != want {
			t.Fatalf("textKey(%q) = %q, want %q", b.String(), got, want)
		}
		if got, want := dedupeKey("s1", b.String()), "s1\x00"+slow(b.String()); got != want {
			t.Fatalf("dedupeKey(s1, %q) = %q, want %q", b.String(), got, want)
		}
	}
}
