package projections

import (
	"errors"
	"slices"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

const (
	scopeSession = memoryv1.SearchScope_SEARCH_SCOPE_SESSION
	scopeUser    = memoryv1.SearchScope_SEARCH_SCOPE_USER
)

func searchCorpus(t *testing.T) *Store {
	t.Helper()
	l := newLogBuilder(t)
	l.create("a1", "alice", "")
	l.create("a2", "alice", "")
	l.create("b1", "bob", "")
	l.create("n1", "", "")
	l.create("n2", "", "")
	l.appendMsgs("a1",
		"The deploy failed with a database timeout on customer-id 42",
		"We restarted the web server and it came back",
		"Lunch is at noon on Friday",
	)
	l.appendMsgs("a2",
		"Database timeout again: error: 3706 from the payments database",
		"O'Brien owns the payments service",
	)
	l.appendMsgs("b1", "database timeout database timeout database timeout in bob's cluster")
	l.appendMsgs("n1", "anonymous database notes")
	l.appendMsgs("n2", "other anonymous database notes")
	l.appendMsgs("a1", "发布失败 数据库超时", "🔥 everything is on fire 🔥")
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	return s
}

func hitIDs(hits []*memoryv1.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.GetMessage().GetId()
	}
	return out
}

func TestSearchRanking(t *testing.T) {
	s := searchCorpus(t)

	// SESSION scope: only a1's messages; the database-timeout one first.
	hits, err := s.Search("a1", scopeSession, "database timeout", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].GetMessage().GetId() != "a1-m1" || hits[0].GetSessionId() != "a1" || hits[0].GetScore() <= 0 {
		t.Fatalf("SESSION hits = %v", hitIDs(hits))
	}
	// USER scope: alice's sessions, never bob's; a2-m1 mentions database twice.
	hits, err = s.Search("a1", scopeUser, "database timeout", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); len(got) != 2 || got[0] != "a2-m1" || got[1] != "a1-m1" {
		t.Fatalf("USER hits = %v", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].GetScore() > hits[i-1].GetScore() {
			t.Fatalf("not sorted: %v", hits)
		}
	}
	// Unscoped (UNSPECIFIED) is SESSION.
	if hits, _ := s.Search("a2", memoryv1.SearchScope_SEARCH_SCOPE_UNSPECIFIED, "server", 0); len(hits) != 0 {
		t.Fatalf("UNSPECIFIED leaked across sessions: %v", hitIDs(hits))
	}
	// Without a user, USER scope stays in the session.
	if hits, _ := s.Search("n1", scopeUser, "database", 0); len(hitIDs(hits)) != 1 || hits[0].GetSessionId() != "n1" {
		t.Fatalf("anonymous USER scope = %v", hitIDs(hits))
	}
	// limit
	if hits, _ := s.Search("a1", scopeUser, "the", 1); len(hits) != 1 {
		t.Fatalf("limit 1 = %v", hitIDs(hits))
	}
	if _, err := s.Search("a1", scopeUser, "x", MaxCandidateLimit+1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("limit %d: %v", MaxCandidateLimit+1, err)
	}
	// Unknown session: no hits, no error.
	if hits, err := s.Search("ghost", scopeUser, "database", 0); err != nil || len(hits) != 0 {
		t.Fatalf("ghost = %v, %v", hits, err)
	}
}

func TestSearchHostileQueries(t *testing.T) {
	s := searchCorpus(t)
	for _, tc := range []struct {
		q    string
		want string // expected top hit in alice's USER scope ("" = any, possibly none)
	}{
		{"customer-id error", ""},
		{"O'Brien", "a2-m2"},
		{"error: 3706", "a2-m1"},
		{"what broke?", ""},
		{`"unbalanced`, ""},
		{"*", ""},
		{"AND OR NOT", ""},
		{"🔥", ""},
		{"数据库", ""},
		{"", ""},
		{"   \t\n", ""},
		{"\x00\xff\xfe", ""},
		{"customer-id", "a1-m1"},
		// Date-shaped and stop-word-only strings.
		{"2023-02-30", ""},
		{"May 2023 2023-13-45 8th of", ""},
		{"what did you?", ""},
		{"who", ""},
		{`"O'Brien" what?`, "a2-m2"},
		{"\x01speaker:alic \x01day:2023-11-14", ""},
	} {
		hits, err := s.Search("a1", scopeUser, tc.q, 0)
		if err != nil {
			t.Errorf("Search(%q) = %v", tc.q, err)
			continue
		}
		if _, err := s.SearchWith("a1", scopeUser, tc.q, 0, SearchOptions{Plain: true}); err != nil {
			t.Errorf("SearchWith(%q, Plain) = %v", tc.q, err)
		}
		if tc.want != "" && (len(hits) == 0 || hits[0].GetMessage().GetId() != tc.want) {
			t.Errorf("Search(%q) = %v, want top %s", tc.q, hitIDs(hits), tc.want)
		}
	}
}

// namedMsgs returns a MessagesAppended of (name, text) pairs said at the
// given times (0: not given).
func namedMsgs(l *logBuilder, sid string, said []int64, pairs ...string) *memoryv1.MessagesAppended {
	var texts, names []string
	for i := 0; i+1 < len(pairs); i += 2 {
		names, texts = append(names, pairs[i]), append(texts, pairs[i+1])
	}
	ev := l.msgs(sid, texts...)
	for i, m := range ev.Messages {
		m.Name = names[i]
		if i < len(said) {
			m.SaidUnixNano = said[i]
		}
	}
	return ev
}

func TestSearchStopWords(t *testing.T) {
	l := newLogBuilder(t)
	l.create("c1", "u", "")
	l.appendMsgs("c1",
		"What did you do today?",
		"I painted a sunrise over the lake",
		"Did you have fun?",
		"What? Did you?",
	)
	s := openTestStore(t)
	mustApply(t, s, l.recs)

	// Plain BM25: the short chit-chat turns win on what/did/you.
	plain, err := s.SearchWith("c1", scopeSession, "What did you paint?", 0, SearchOptions{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(plain); len(got) < 2 || got[0] == "c1-m2" {
		t.Fatalf("plain = %v: expected chit-chat first (the case this fixes)", got)
	}
	// Stop words dropped: only the painting turn matches.
	hits, err := s.Search("c1", scopeSession, "What did you paint?", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); len(got) != 1 || got[0] != "c1-m2" {
		t.Fatalf("Search = %v, want [c1-m2]", got)
	}
	// Only stop words: kept, the query still searches.
	hits, _ = s.Search("c1", scopeSession, "what?", 0)
	if got := hitIDs(hits); len(got) != 2 || got[0] != "c1-m4" {
		t.Fatalf(`Search("what?") = %v, want [c1-m4 c1-m1]`, got)
	}
	// Stop words and a term the corpus lacks: the stop words stay (the
	// unknown term cannot match, so dropping them would leave nothing).
	hits, _ = s.Search("c1", scopeSession, "what did you zzyzx", 0)
	if len(hits) == 0 {
		t.Fatal(`Search("what did you zzyzx") found nothing`)
	}
}

func TestSearchSpeaker(t *testing.T) {
	l := newLogBuilder(t)
	l.create("c1", "u", "")
	l.add("c1", namedMsgs(l, "c1", nil,
		"Bob", "The deploy went fine there",
		"Alice", "The deploy went fine here",
		"Bob", "Alice, do you want to grab lunch at noon today?",
		"Alice", "Sure",
	))
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	hits, err := s.Search("c1", scopeSession, "What did Alice say about the deploy?", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); len(got) < 2 || got[0] != "c1-m2" {
		t.Fatalf("Search = %v, want c1-m2 (Alice on the deploy) first", got)
	}
	// Plain BM25 does not know speakers: Bob's older message ties and wins.
	plain, _ := s.SearchWith("c1", scopeSession, "What did Alice say about the deploy?", 0, SearchOptions{Plain: true})
	if got := hitIDs(plain); len(got) == 0 || got[0] == "c1-m2" {
		t.Fatalf("plain = %v", got)
	}
	// A name alone finds the speaker's messages and the mentions.
	hits, _ = s.Search("c1", scopeSession, "alice", 0)
	if got := hitIDs(hits); len(got) != 3 {
		t.Fatalf(`Search("alice") = %v, want c1-m2, c1-m3, c1-m4`, got)
	}
}

func TestSearchDates(t *testing.T) {
	may8 := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC).UnixNano()
	jun2 := time.Date(2023, 6, 2, 9, 0, 0, 0, time.UTC).UnixNano()
	l := newLogBuilder(t)
	l.create("c1", "u", "")
	l.add("c1", namedMsgs(l, "c1", []int64{may8, jun2, jun2},
		"Caroline", "I went to the support group",
		"Caroline", "I went to the support group again",
		"Melanie", "We went camping",
	))
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	for q, want := range map[string]string{
		"support group on 8 May 2023":  "c1-m1",
		"support group on 2023-06-02":  "c1-m2",
		"support group in June 2023":   "c1-m2",
		"what happened on 2 June 2023": "c1-m3", // a day alone matches (m2, m3 tie; m3 newer)
	} {
		hits, err := s.Search("c1", scopeSession, q, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := hitIDs(hits); len(got) == 0 || got[0] != want {
			t.Errorf("Search(%q) = %v, want %s first", q, got, want)
		}
	}
	// A day no message was said on: no boost, ordinary ranking.
	hits, _ := s.Search("c1", scopeSession, "support group on 1 January 2020", 0)
	if got := hitIDs(hits); len(got) != 2 {
		t.Errorf("Search(other day) = %v", got)
	}
	// The append time stands in when said_unix_nano is 0 (baseTime: 2023-11-14).
	l2 := newLogBuilder(t)
	l2.create("c2", "u", "")
	l2.appendMsgs("c2", "live message")
	s2 := openTestStore(t)
	mustApply(t, s2, l2.recs)
	if hits, _ := s2.Search("c2", scopeSession, "2023-11-14", 0); len(hits) != 1 {
		t.Errorf("append-time day: %v", hitIDs(hits))
	}
}

// TestSearchProximity: two messages with the same terms and length; the
// one holding the query as a phrase ranks first with proximity (plain
// BM25 ties, and the older one wins).
func TestSearchProximity(t *testing.T) {
	l := newLogBuilder(t)
	l.create("c1", "u", "")
	l.appendMsgs("c1",
		"class notes: the pottery kiln was hot today",
		"pottery class notes: the kiln was hot today",
		"the weather was fine",
	)
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	plain, _ := s.SearchWith("c1", scopeSession, "pottery class", 0, SearchOptions{Plain: true})
	if got := hitIDs(plain); len(got) != 2 || got[0] != "c1-m1" || plain[0].GetScore() != plain[1].GetScore() {
		t.Fatalf("plain = %v (scores %v, %v): want a tie", got, plain[0].GetScore(), plain[1].GetScore())
	}
	hits, err := s.Search("c1", scopeSession, "pottery class", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); len(got) != 2 || got[0] != "c1-m2" || hits[0].GetScore() <= plain[0].GetScore() {
		t.Fatalf("Search = %v, want the phrase c1-m2 first with a bonus", got)
	}
	// Reversed order is closer than far apart but below the phrase.
	rev, _ := s.Search("c1", scopeSession, "class pottery", 0)
	if got := hitIDs(rev); got[0] != "c1-m2" {
		t.Fatalf("reversed query = %v", got)
	}
}

// searchIDs runs query in c1 (SESSION scope) with rk and returns the hits'
// ids.
func searchIDs(t *testing.T, s *Store, query string, rk ranking) []string {
	t.Helper()
	hits, err := s.search("c1", scopeSession, query, 0, rk)
	if err != nil {
		t.Fatal(err)
	}
	return hitIDs(hits)
}

// TestSearchRecency: of two statements that score the same, the newer
// ranks first (a correction states the current value); without the
// recency part the older one did (ties: older first).
func TestSearchRecency(t *testing.T) {
	l := newLogBuilder(t)
	l.create("c1", "u", "")
	l.appendMsgs("c1",
		"The Orion migration lead is Priya.",
		"The budget is fine.",
		"The Orion migration lead is Yuki.",
	)
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	off := defaultRanking
	off.recency = 0
	if got := searchIDs(t, s, "Who leads the Orion migration?", off); len(got) != 2 || got[0] != "c1-m1" {
		t.Fatalf("without recency: %v, want the tie c1-m1, c1-m3", got)
	}
	if got := searchIDs(t, s, "Who leads the Orion migration?", defaultRanking); len(got) != 2 || got[0] != "c1-m3" {
		t.Fatalf("Search = %v, want the newer c1-m3 first", got)
	}
	// A prior, not a filter: a better match stays ahead of a newer one.
	l.appendMsgs("c1", "Orion news.")
	s2 := openTestStore(t)
	mustApply(t, s2, l.recs)
	if got := searchIDs(t, s2, "Orion migration lead", defaultRanking); len(got) != 3 || got[2] != "c1-m4" {
		t.Fatalf("Search = %v, want c1-m4 (one term) last", got)
	}
}

// TestSearchDedupe: a text said several times is one hit, its newest
// copy, and the room goes to other texts; without dedupe every copy was a
// hit.
func TestSearchDedupe(t *testing.T) {
	l := newLogBuilder(t)
	l.create("c1", "u", "")
	l.appendMsgs("c1",
		"The customer id of Acme is CUS-42.",
		"Acme renewed its contract.",
		"the customer id of  ACME is CUS-42.",
		"The customer id of Acme is CUS-42.",
	)
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	off := defaultRanking
	off.dedupe = false
	if got := searchIDs(t, s, "Acme customer id", off); len(got) != 4 {
		t.Fatalf("without dedupe: %v, want 4 hits", got)
	}
	got := searchIDs(t, s, "Acme customer id", defaultRanking)
	if !slices.Equal(got, []string{"c1-m4", "c1-m2"}) {
		t.Fatalf("Search = %v, want [c1-m4 c1-m2]", got)
	}
	// The limit counts distinct texts.
	hits, err := s.search("c1", scopeSession, "Acme customer id", 2, defaultRanking)
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); !slices.Equal(got, []string{"c1-m4", "c1-m2"}) {
		t.Fatalf("limit 2: %v", got)
	}
}

// TestSearchQuestionTurns: for a question, a turn that asks it again
// ranks below a turn that answers it; without the question part the
// shorter echo ranked first. A query that is no question keeps the plain
// order.
func TestSearchQuestionTurns(t *testing.T) {
	l := newLogBuilder(t)
	l.create("c1", "u", "")
	l.appendMsgs("c1",
		"Acme open balance: 12,000 USD across three open invoices, due in May.",
		"What is the open balance of Acme?",
	)
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	off := defaultRanking
	off.question = 0
	q := "What is the open balance of Acme?"
	if got := searchIDs(t, s, q, off); len(got) != 2 || got[0] != "c1-m2" {
		t.Fatalf("without the question part: %v, want the echo c1-m2 first", got)
	}
	if got := searchIDs(t, s, q, defaultRanking); len(got) != 2 || got[0] != "c1-m1" {
		t.Fatalf("Search = %v, want the answer c1-m1 first", got)
	}
	if got := searchIDs(t, s, "Acme open balance", defaultRanking); len(got) != 2 || got[0] != "c1-m2" {
		t.Fatalf("not a question: %v, want c1-m2 first", got)
	}
}
