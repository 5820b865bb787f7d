package projections

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// summaryLog is a session of alice with messages about a deploy, then an
// L2Archived of two summaries, and another session of alice with its own.
func summaryLog(t *testing.T, archive bool) *logBuilder {
	l := newLogBuilder(t)
	l.create("a1", "alice", "")
	l.create("a2", "alice", "")
	l.appendMsgs("a1", "The deploy failed with a database timeout", "We restarted the web server", "Lunch is at noon")
	l.appendMsgs("a2", "database timeout in the payments service")
	if archive {
		l.add("a1", &memoryv1.L2Archived{Summaries: []*memoryv1.Summary{
			{Id: "s1", FirstSeq: 1, LastSeq: 2, Text: "The user reported a failed deploy; the kangaroo migration was postponed to Friday.", Tokens: 20},
			{Id: "s2", FirstSeq: 3, LastSeq: 3, Text: "They planned lunch at noon.", Tokens: 7},
		}})
		l.add("a2", &memoryv1.L2Archived{Summaries: []*memoryv1.Summary{
			{Id: "t1", FirstSeq: 1, LastSeq: 1, Text: "The kangaroo service of payments.", Tokens: 7},
		}})
	}
	return l
}

// TestSearchSummaries: archived summaries are found by SearchSummaries, of
// the session only, with Summary set; message searches rank exactly as
// without them (their own corpus).
func TestSearchSummaries(t *testing.T) {
	with, without := openTestStore(t), openTestStore(t)
	mustApply(t, with, summaryLog(t, true).recs)
	mustApply(t, without, summaryLog(t, false).recs)

	hits, err := with.SearchSummaries("a1", "when is the kangaroo migration", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].GetSummary().GetId() != "s1" || hits[0].GetMessage() != nil ||
		hits[0].GetSessionId() != "a1" || hits[0].GetScore() <= 0 {
		t.Fatalf("summary hits = %v", hits)
	}
	if hits, _ := without.SearchSummaries("a1", "kangaroo", 0); len(hits) != 0 {
		t.Fatalf("hits without archived summaries: %v", hits)
	}
	for _, scope := range []memoryv1.SearchScope{scopeSession, scopeUser} {
		for _, q := range []string{"database timeout", "kangaroo deploy", "lunch noon"} {
			a, err := with.Search("a1", scope, q, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := without.Search("a1", scope, q, 0)
			if !slices.EqualFunc(a, b, func(x, y *memoryv1.SearchHit) bool { return proto.Equal(x, y) }) {
				t.Fatalf("%v %q: message hits changed by the summaries:\n%v\n%v", scope, q, a, b)
			}
		}
	}
}

// TestRecallSummaries pages a session's archived summaries in message order.
func TestRecallSummaries(t *testing.T) {
	s := openTestStore(t)
	mustApply(t, s, summaryLog(t, true).recs)
	sums, total, err := s.RecallSummaries("a1", 0, 1)
	if err != nil || total != 2 || len(sums) != 1 || sums[0].GetId() != "s1" {
		t.Fatalf("page 1 = %v total %d err %v", sums, total, err)
	}
	sums, total, _ = s.RecallSummaries("a1", 1, 0)
	if total != 2 || len(sums) != 1 || sums[0].GetId() != "s2" {
		t.Fatalf("page 2 = %v total %d", sums, total)
	}
	if sums, total, _ := s.RecallSummaries("a1", 5, 0); total != 2 || len(sums) != 0 {
		t.Fatalf("past the end = %v", sums)
	}
	if _, _, err := s.RecallSummaries("a1", 0, MaxRecallLimit+1); err == nil {
		t.Fatal("limit above the maximum accepted")
	}
}
