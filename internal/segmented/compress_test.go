package segmented

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func l2IDs(s *State) []string {
	var ids []string
	for _, sum := range s.snap.L2 {
		ids = append(ids, sum.Id)
	}
	return ids
}

// TestL2FIFOGrowsToCapThenArchivesOldest: L2 is append-only until it would
// exceed max_l2_tokens; then only its oldest summaries leave (to swap),
// condensed into one summary that stays at the head of L2.
func TestL2FIFOGrowsToCapThenArchivesOldest(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{Profile: ProfileBalanced, MaxContextTokens: 3500, ReservedOutputTokens: 500, MaxL2Tokens: 700})
	maxL2 := uint64(700)
	var prev []string
	var prevTokens uint64
	archivedOnce := false
	for i := range 150 {
		evs := appendOK(t, s,
			user(fmt.Sprintf("Question %d: what is the status of ticket T-%d for Alice? %s", i, 100+i, strings.Repeat("Some background. ", i%4))),
			assistant(fmt.Sprintf("Ticket T-%d is assigned to Bob and due on May %d. %s", 100+i, 1+i%28, strings.Repeat("We looked into it. ", 3+i%5))))
		checkInvariants(t, s)
		ids := l2IDs(s)
		archived := false
		for _, ev := range evs {
			if a, ok := ev.(*memoryv1.L2Archived); ok {
				archived = true
				// Only the oldest, never all of a long L2.
				if len(a.Summaries) >= len(prev)+1 && len(prev) > 3 {
					t.Fatalf("append %d archived %d summaries of an L2 of %d", i, len(a.Summaries), len(prev))
				}
			}
		}
		switch {
		case !archived:
			// Append-only: the old L2 is a prefix of the new one.
			if len(ids) < len(prev) || !slices.Equal(ids[:len(prev)], prev) || s.tok.l2 < prevTokens {
				t.Fatalf("append %d: L2 %v does not extend %v", i, ids, prev)
			}
		default:
			archivedOnce = true
			// The survivors keep their order; the head is condensed.
			head := s.snap.L2[0]
			if len(head.SummaryIds) == 0 || head.FirstSeq != 1 {
				t.Fatalf("append %d: L2 head %s is not a condensed summary from message 1: %v", i, head.Id, head)
			}
			var kept []string
			for _, id := range ids[1:] {
				if slices.Contains(prev, id) {
					kept = append(kept, id)
				}
			}
			if len(kept) > 0 {
				at := slices.Index(prev, kept[0])
				if !slices.Equal(prev[at:at+len(kept)], kept) {
					t.Fatalf("append %d: survivors %v are not a contiguous run of %v", i, kept, prev)
				}
			}
		}
		if s.tok.l2 > maxL2 {
			t.Fatalf("append %d: L2 %d > %d", i, s.tok.l2, maxL2)
		}
		prev, prevTokens = ids, s.tok.l2
	}
	if !archivedOnce || s.snap.ArchivedL2Count == 0 {
		t.Fatal("L2 never reached max_l2_tokens")
	}
	if len(s.snap.L2) < 3 {
		t.Fatalf("L2 holds %d summaries at the end", len(s.snap.L2))
	}
	t.Logf("L2: %d summaries, %d tokens of %d; %d archived", len(s.snap.L2), s.tok.l2, maxL2, s.snap.ArchivedL2Count)
}

// scriptedTurn returns turn i (1-based) of a 60-turn scripted conversation:
// small talk first, a decision at turn 16, a key tool result at turn 30,
// and ordinary questions and answers around them.
func scriptedTurn(i int) []*memoryv1.MessageInput {
	topics := []string{"the onboarding flow", "the pricing page", "the weekly report", "the export job", "the search box", "the mobile layout"}
	topic := topics[i%len(topics)]
	switch i {
	case 1:
		return []*memoryv1.MessageInput{
			user("Hi! How are you today? Lovely weather here, the sun is finally out."),
			assistant("Hello! I'm doing well, thanks for asking. Glad to hear the sun is out. How can I help?"),
		}
	case 16:
		return []*memoryv1.MessageInput{
			user("After comparing the three carriers, which one should we pick?"),
			assistant("We decided to go with Acme Logistics: contract ACME-7781 runs for 24 months at 4.10 EUR per parcel, starting on June 3."),
		}
	case 30:
		return []*memoryv1.MessageInput{
			user("Please refund the damaged order for Mrs. Okafor."),
			assistant("", call("refund-30", "issue_refund")),
			toolResult("refund-30", "status: ok\nrefund RF-5521 issued: 312.40 EUR to card ending 0417"),
			assistant("The refund is done."),
		}
	}
	return []*memoryv1.MessageInput{
		user(fmt.Sprintf("Turn %d: could you look at %s again? Something about it still feels a bit off to me, though I can't quite say what.", i, topic)),
		assistant(fmt.Sprintf("Sure. I went over %s once more. Overall it looks reasonable, and most of what we discussed earlier still holds. "+
			"There are a couple of small things we could polish, but nothing urgent, and it is probably fine to leave it as it is for now. "+
			"Let me know if you want me to dig deeper into any particular part of it.", topic)),
	}
}

// TestLongConversationKeepsTheMiddle is the case of issue 8: with one
// rolling summary, a decision from turn 16 and a key tool result were gone
// by turn 59 while the small talk of turn 1 remained. Summaries are now
// made once and chosen by salience: the decision and the tool result are
// in the context at turn 60 (in an L2 summary or the condensed one), the
// small talk is not.
func TestLongConversationKeepsTheMiddle(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{SystemPrompt: "You are a logistics assistant.", MaxContextTokens: 2000, ReservedOutputTokens: 300})
	for i := 1; i <= 60; i++ {
		appendOK(t, s, scriptedTurn(i)...)
		checkInvariants(t, s)
	}
	var ctx strings.Builder
	for _, m := range s.Context().Messages {
		ctx.WriteString(m.Content)
		ctx.WriteString("\n")
	}
	text := ctx.String()
	for _, want := range []string{"ACME-7781", "Acme Logistics", "24 months", "RF-5521", "312.40 EUR"} {
		if !strings.Contains(text, want) {
			t.Errorf("turn 60: context lost %q", want)
		}
	}
	if strings.Contains(text, "weather") {
		t.Errorf("turn 60: context still holds the small talk of turn 1")
	}
	if t.Failed() {
		t.Logf("context:\n%s", text)
	}
	if s.snap.Compressions == 0 || len(s.snap.L2) == 0 {
		t.Fatalf("%d compressions, %d L2 summaries: the test does not exercise compression", s.snap.Compressions, len(s.snap.L2))
	}
}

// hundredTokens returns message i of the worked example in doc.go: about
// 100 tokens, mostly filler, with one fact.
func hundredTokens(t *testing.T, i int) *memoryv1.MessageInput {
	tok := tokenizerT(t)
	text := fmt.Sprintf("Item %d: ticket T-%d was assigned to Ana.", i, 100+i)
	for tok.Count(text)+MessageOverheadTokens < 100 {
		text += " ok"
	}
	if i%2 == 1 {
		return user(text)
	}
	return assistant(text)
}

// TestWorkedExample runs steps 1 and 2 of the worked example in doc.go.
func TestWorkedExample(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 1500, ReservedOutputTokens: 500,
		SystemPrompt: "You are a helpful assistant for the support team of a shop."})
	if cfg := s.snap.Config; cfg.MaxL2Tokens != 250 || cfg.SummaryMaxTokens != 250 || cfg.Profile.Name != ProfileFill {
		t.Fatalf("config %v", cfg)
	}
	t.Logf("ROM %d tokens", s.tok.rom)
	for i := 1; i <= 9; i++ {
		if evs := appendOK(t, s, hundredTokens(t, i)); compresses(evs) {
			t.Fatalf("message %d compressed", i)
		}
	}
	t.Logf("after 9 messages: %d tokens (%.0f %%)", s.UsedTokens(), s.Usage().Percent)
	evs := appendOK(t, s, hundredTokens(t, 10))
	var kinds []string
	for _, ev := range evs[1:] {
		kinds = append(kinds, fmt.Sprintf("%T", ev))
	}
	ev, ok := evs[1].(*memoryv1.L1Evicted)
	if !ok || len(evs) != 2 || len(ev.MovedSummaryIds) != 0 {
		t.Fatalf("message 10 decided %v", kinds)
	}
	t.Logf("message 10: %s, %d of %d tokens; usage %d (%.0f %%)\n%s", ev.Summary.Id, ev.Summary.Tokens, ev.Summary.CoveredTokens, s.UsedTokens(), s.Usage().Percent, ev.Summary.Text)
	if ev.Summary.FirstSeq != 1 || ev.Summary.LastSeq != 2 || len(s.snap.L2) != 1 || s.Usage().Percent >= 90 {
		t.Fatalf("evicted %d-%d", ev.Summary.FirstSeq, ev.Summary.LastSeq)
	}
}
