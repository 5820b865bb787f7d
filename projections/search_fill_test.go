package projections

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestSearchFillsWithTheUsersOtherMessages: with Corpus.Fill a search of a
// user's history returns its hits, then the user's messages the query did
// not match (never another user's, never twice), each session's newest
// first and scored below every hit, up to the limit; without it, the hits
// alone.
func TestSearchFillsWithTheUsersOtherMessages(t *testing.T) {
	l := newLogBuilder(t)
	l.create("a1", "alice", "bot")
	l.appendMsgs("a1", "I work at the tram depot", "nice", "my sister lives in Porto", "ok")
	l.create("a2", "alice", "bot")
	l.appendMsgs("a2", "yep, still doing physio", "good to hear")
	l.create("b1", "bob", "bot")
	l.appendMsgs("b1", "bob's tram stories", "fun")
	s := openTestStore(t)
	mustApply(t, s, l.recs)

	search := func(fill bool, limit int) []*memoryv1.SearchHit {
		t.Helper()
		hits, err := s.SearchWith("", memoryv1.SearchScope_SEARCH_SCOPE_USER, "where does she work on the tram", limit,
			SearchOptions{Corpus: &Corpus{User: "alice", Fill: fill}})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	plain := search(false, 10)
	if len(plain) != 1 || plain[0].GetMessage().GetContent() != "I work at the tram depot" {
		t.Fatalf("hits without fill: %v", plain)
	}
	all := search(true, 10)
	if len(all) != 6 || all[0].GetMessage().GetContent() != "I work at the tram depot" {
		t.Fatalf("filled: %d hits, want alice's 6 messages, the match first: %v", len(all), all)
	}
	seen := map[string]bool{}
	last := map[string]uint64{}
	for _, h := range all[1:] {
		m := h.GetMessage()
		if h.GetSessionId() == "b1" || seen[m.GetId()] || h.GetScore() >= all[0].GetScore() || h.GetScore() <= 0 {
			t.Fatalf("filled hit %s/%s score %v (the match %v)", h.GetSessionId(), m.GetId(), h.GetScore(), all[0].GetScore())
		}
		if prev, ok := last[h.GetSessionId()]; ok && m.GetSeq() >= prev {
			t.Fatalf("session %s filled oldest first: seq %d after %d", h.GetSessionId(), m.GetSeq(), prev)
		}
		seen[m.GetId()], last[h.GetSessionId()] = true, m.GetSeq()
	}
	if got := search(true, 3); len(got) != 3 {
		t.Fatalf("filled past the limit: %d hits of 3", len(got))
	}
	except, err := s.SearchWith("", memoryv1.SearchScope_SEARCH_SCOPE_USER, "where does she work on the tram", 10,
		SearchOptions{Corpus: &Corpus{User: "alice", Fill: true, Except: "a2"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range except[1:] {
		if h.GetSessionId() == "a2" {
			t.Fatalf("the fill took a message of the session it leaves out: %v", h)
		}
	}
	if len(except) != 4 {
		t.Fatalf("fill without a2: %d hits, want the match and a1's 3 others", len(except))
	}
}

// TestSearchFillReadsBoundedBytes: a history of large messages fills
// until fillMaxBytes are read, not to the limit.
func TestSearchFillReadsBoundedBytes(t *testing.T) {
	l := newLogBuilder(t)
	l.create("big", "carol", "bot")
	big := strings.Repeat("tool output ", 128<<10/12)
	for range 20 {
		l.appendMsgs("big", big, big)
	}
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	hits, err := s.SearchWith("", memoryv1.SearchScope_SEARCH_SCOPE_USER, "anything", 100, SearchOptions{Corpus: &Corpus{User: "carol", Fill: true}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(hits); n == 0 || n*len(big) > fillMaxBytes+len(big)+4096 {
		t.Fatalf("filled %d messages of %d bytes: past the %d-byte bound", n, len(big), fillMaxBytes)
	}
}

// TestMessageRoleContent: the role and whether the content is empty, read
// from the encoded message without decoding it, are what decoding it gives
// (every role, empty and bulky contents, tool calls).
func TestMessageRoleContent(t *testing.T) {
	roles := []memoryv1.Role{memoryv1.Role_ROLE_UNSPECIFIED, memoryv1.Role_ROLE_USER, memoryv1.Role_ROLE_ASSISTANT, memoryv1.Role_ROLE_TOOL, memoryv1.Role_ROLE_SYSTEM, memoryv1.Role(99)}
	for i := range 200 {
		m := &memoryv1.Message{Id: fmt.Sprintf("m%d", i), Seq: uint64(i), Role: roles[i%len(roles)], Name: "Alice", CreatedUnixNano: int64(i) << 40}
		if i%3 > 0 {
			m.Content = strings.Repeat("result ", i)
		}
		if i%4 == 0 {
			m.ToolCalls = []*memoryv1.ToolCall{{Id: "c", Name: "f", Arguments: "{}"}}
		}
		v, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		role, content, err := messageRoleContent(v)
		if err != nil || role != m.GetRole() || content != (m.GetContent() != "") {
			t.Fatalf("message %d: role %v content %v (%v), want %v %v", i, role, content, err, m.GetRole(), m.GetContent() != "")
		}
	}
	if _, _, err := messageRoleContent([]byte{0x0a, 0x05, 'a'}); err == nil {
		t.Fatal("a truncated message read without an error")
	}
}
