package projections

import (
	"fmt"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// corpusSearch searches alice's sessions with c (User set to alice).
func corpusSearch(t *testing.T, s *Store, q string, limit int, c Corpus) []*memoryv1.SearchHit {
	t.Helper()
	c.User = "alice"
	hits, err := s.SearchWith("", memoryv1.SearchScope_SEARCH_SCOPE_USER, q, limit, SearchOptions{Corpus: &c})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func contents(hits []*memoryv1.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.GetSessionId() + ": " + h.GetMessage().GetContent()
	}
	return out
}

// TestSearchExceptLeavesTheSessionOutOfTheRanking: the session a corpus
// search leaves out takes no place among the hits, however well its
// messages match: with a limit of one, the hit is the other session's.
func TestSearchExceptLeavesTheSessionOutOfTheRanking(t *testing.T) {
	l := newLogBuilder(t)
	l.create("a1", "alice", "bot")
	l.appendMsgs("a1", "I work at the tram depot, mostly nights", "ok")
	l.create("a2", "alice", "bot")
	l.appendMsgs("a2", "tram depot?", "tram depot", "the tram depot", "tram depot tram depot")
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	if got := corpusSearch(t, s, "where is the tram depot", 1, Corpus{}); len(got) != 1 || got[0].GetSessionId() != "a2" {
		t.Fatalf("without Except, want a2's best match: %q", contents(got))
	}
	got := corpusSearch(t, s, "where is the tram depot", 1, Corpus{Except: "a2"})
	if len(got) != 1 || got[0].GetSessionId() != "a1" {
		t.Fatalf("with Except a2, want a1's match: %q", contents(got))
	}
	for _, h := range corpusSearch(t, s, "where is the tram depot", 10, Corpus{Except: "a2", Fill: true, Feedback: true, Replies: true}) {
		if h.GetSessionId() == "a2" {
			t.Fatalf("a hit of the session left out: %q", contents([]*memoryv1.SearchHit{h}))
		}
	}
}

// TestSearchRepliesFollowTheirQuestions: with Replies, a hit that asks a
// question is followed by the other party's next message, at its score,
// once (a reply that matched better than its question stays where it
// is); a question followed by the same speaker gets nothing.
func TestSearchRepliesFollowTheirQuestions(t *testing.T) {
	l := newLogBuilder(t)
	l.create("a1", "alice", "bot")
	l.appendMsgs("a1", "what is your dog called?", "Biscuit, a beagle")
	l.appendMsgs("a1", "which dog sleeps on the sofa?", "the dog does, all day")
	l.create("a2", "alice", "bot")
	l.appendMsgs("a2", "are dogs called by whistles?")
	l.appendMsgs("a2", "I should buy one")
	s := openTestStore(t)
	mustApply(t, s, l.recs)

	plain := corpusSearch(t, s, "what is the dog called", 10, Corpus{})
	for _, h := range plain {
		if h.GetMessage().GetContent() == "Biscuit, a beagle" {
			t.Fatalf("the reply matched without Replies: %q", contents(plain))
		}
	}
	got := corpusSearch(t, s, "what is the dog called", 10, Corpus{Replies: true})
	seen := map[string]int{}
	for i, h := range got {
		c := h.GetMessage().GetContent()
		seen[c]++
		switch c {
		case "Biscuit, a beagle":
			q := got[i-1]
			if q.GetMessage().GetSeq()+1 != h.GetMessage().GetSeq() || q.GetScore() != h.GetScore() {
				t.Fatalf("reply %q not right after its question at its score: %q", c, contents(got))
			}
		case "I should buy one":
			t.Fatalf("a question's next message by the same speaker was added: %q", contents(got))
		}
	}
	if seen["Biscuit, a beagle"] != 1 || seen["the dog does, all day"] != 1 {
		t.Fatalf("each reply once: %q", contents(got))
	}
	if n := len(corpusSearch(t, s, "what is the dog called", 2, Corpus{Replies: true})); n != 2 {
		t.Fatalf("%d hits past the limit of 2", n)
	}
}

// TestSearchFeedbackFindsTheTurnInOtherWords: with Feedback, a message
// that shares no word with the query but a rare one with its best hit is
// found, below that hit; without, it is not.
func TestSearchFeedbackFindsTheTurnInOtherWords(t *testing.T) {
	l := newLogBuilder(t)
	l.create("a1", "alice", "bot")
	l.appendMsgs("a1", "I started pottery classes, the zorbit is so calming", "nice")
	l.appendMsgs("a1", "the zorbit was booked all week", "too bad")
	for i := range 12 {
		l.appendMsgs("a1", fmt.Sprintf("note %d about the weather today", i), fmt.Sprintf("reply %d", i))
	}
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	const target = "the zorbit was booked all week"
	for _, h := range corpusSearch(t, s, "what does she do at pottery", 10, Corpus{}) {
		if h.GetMessage().GetContent() == target {
			t.Fatalf("found without feedback: the test says nothing")
		}
	}
	got := corpusSearch(t, s, "what does she do at pottery", 10, Corpus{Feedback: true})
	if len(got) != 2 || got[1].GetMessage().GetContent() != target || got[1].GetScore() >= got[0].GetScore() {
		t.Fatalf("with feedback, want the pottery turn then %q: %q", target, contents(got))
	}
}
