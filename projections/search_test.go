package projections

import (
	"errors"
	"testing"

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
	if _, err := s.Search("a1", scopeUser, "x", 21); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("limit 21: %v", err)
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
	} {
		hits, err := s.Search("a1", scopeUser, tc.q, 0)
		if err != nil {
			t.Errorf("Search(%q) = %v", tc.q, err)
			continue
		}
		if tc.want != "" && (len(hits) == 0 || hits[0].GetMessage().GetId() != tc.want) {
			t.Errorf("Search(%q) = %v, want top %s", tc.q, hitIDs(hits), tc.want)
		}
	}
}
