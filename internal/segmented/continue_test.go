package segmented

import (
	"fmt"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// earlierHits are n short turns of two earlier sessions of the user, on
// two days each, as the node's search returns them (best first).
func earlierHits(n int) *Candidates {
	c := &Candidates{}
	day := time.Date(2023, 5, 8, 18, 0, 0, 0, time.UTC)
	for i := range n {
		sid := fmt.Sprintf("earlier-%d", i%2)
		at := day.AddDate(0, 0, 7*((i/2)%2)).Add(time.Duration(i) * time.Minute)
		c.Recall = append(c.Recall, &memoryv1.Message{Id: fmt.Sprintf("m%d", i), Seq: uint64(i + 1), Role: memoryv1.Role_ROLE_USER,
			Content: fmt.Sprintf("short turn %d about the allotment", i), SaidUnixNano: at.UnixNano()})
		c.RecallScores = append(c.RecallScores, 10-float64(i)/float64(n))
		c.RecallSessions = append(c.RecallSessions, sid)
	}
	return c
}

// TestEarlierItemsShareTheirSittingsHeader: items of another session after
// one of the same session and day show as "[user] …" under its header
// ("[2023-05-08 earlier session, user] …"), count the tokens they show,
// and the tokens given back hold more of the earlier hits than each
// header would have: the context stays within its budget.
func TestEarlierItemsShareTheirSittingsHeader(t *testing.T) {
	const budget = 600
	s := mustCreate(t, &memoryv1.CreateSessionRequest{UserId: "u", MaxContextTokens: budget + 100, ReservedOutputTokens: 100})
	c := earlierHits(120)
	ev := assembledEvent(appendWith(t, s, c, user("What did I plant on the allotment?")))
	if ev == nil {
		t.Fatal("no ContextAssembled")
	}
	rec := ev.Sections.Recalled
	var continued, headers int
	tok, _ := NewTokenizer()
	for k, it := range rec {
		m := c.Recall[it.Seq-1]
		want := EarlierSessionText(m)
		if k > 0 && sameSitting(rec[k-1], it) {
			want = EarlierContinuedText(m)
			if !it.Continued {
				t.Errorf("item %d follows one of its sitting but is not continued", k)
			}
			continued++
		} else {
			if it.Continued {
				t.Errorf("item %d opens its sitting but is continued", k)
			}
			headers++
		}
		if it.Trimmed || int(it.TextBytes) != len(want) || it.Tokens != textTokens(tok, want) {
			t.Errorf("item %d: %d bytes, %d tokens, trimmed %v; its text %q counts %d", k, it.TextBytes, it.Tokens, it.Trimmed, want, textTokens(tok, want))
		}
	}
	if headers != 4 || continued == 0 {
		t.Fatalf("%d items: %d under a header of their own, %d continued; want 4 headers (2 sessions, 2 days each)", len(rec), headers, continued)
	}
	// Without continuing, each item would count its header: fewer fit.
	full := uint32(0)
	for _, it := range rec {
		full += textTokens(tok, EarlierSessionText(c.Recall[it.Seq-1]))
	}
	if cx := s.Context(); cx.GetUsage().GetUsed() > budget {
		t.Fatalf("the context uses %d tokens of %d", cx.GetUsage().GetUsed(), budget)
	} else if uint64(full) <= uint64(budget)-uint64(cx.GetUsage().GetUsed())+uint64(cx.GetLayers().GetRecalled()) {
		t.Fatalf("the recalled items would fit with a header each (%d tokens): the tokens given back were not used", full)
	}
	// Read back from the messages, the context shows the same texts.
	cx := Hydrate(s.Context(), Sources{Message: func(sid string, seq uint64) (*memoryv1.Message, bool) {
		return c.Recall[seq-1], true
	}})
	var shown []string
	for _, m := range cx.GetMessages() {
		if m.GetLayer() == LayerRecalled {
			shown = append(shown, m.GetContent())
		}
	}
	if len(shown) != len(rec) || !strings.HasPrefix(shown[0], "[2023-05-08 earlier session, user] short turn") || !strings.HasPrefix(shown[1], "[user] short turn") {
		t.Fatalf("recalled texts: %d of %d, first %q", len(shown), len(rec), shown[:min(2, len(shown))])
	}
}
