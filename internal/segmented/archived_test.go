package segmented

import (
	"fmt"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// archivedSession is plantedSession until compression has archived the L2
// summary of the planted fact; it returns that summary.
func archivedSession(t *testing.T, assembly *memoryv1.AssemblyConfig) (*State, *memoryv1.Summary) {
	t.Helper()
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 1500, ReservedOutputTokens: 500, Assembly: assembly})
	appendOK(t, s, user("Remember this: the staging database password rotates on the 14th, owner is Priya Raman."))
	for i := range 400 {
		evs := appendOK(t, s, user(fmt.Sprintf("Filler question %d about the weather and lunch plans for the team outing?", i)),
			assistant(fmt.Sprintf("Filler answer %d: sunny, sandwiches, and a walk by the river after the standup meeting.", i)))
		for _, ev := range evs {
			if a, ok := ev.(*memoryv1.L2Archived); ok {
				for _, sum := range a.GetSummaries() {
					if sum.GetFirstSeq() == 1 {
						return s, sum
					}
				}
			}
		}
	}
	t.Fatal("setup: the planted message's summary was never archived")
	return nil, nil
}

// TestAssembleOffersArchivedSummaries: an archived summary the session's
// search found is a recalled item holding the summary (id and text), and
// the context shows it; without archived_summaries (the default) it is
// not offered and the candidate key asks for summaries only when on.
func TestAssembleOffersArchivedSummaries(t *testing.T) {
	s, sum := archivedSession(t, &memoryv1.AssemblyConfig{Recall: true, ArchivedSummaries: true})
	if k, _ := s.CandidateKey(); !k.Summaries {
		t.Fatalf("candidate key of a session with archived summaries: %+v", k)
	}
	c := &Candidates{Summaries: []*memoryv1.Summary{sum}, SummaryScores: []float64{3}}
	ev := assembledEvent(appendWith(t, s, c, user("Who owns the staging database password?")))
	if ev == nil || len(ev.Sections.Recalled) != 1 {
		t.Fatalf("recalled section: %v", ev)
	}
	it := ev.Sections.Recalled[0]
	if it.SummaryId != sum.Id || it.MessageId != "" || it.Seq != sum.LastSeq || it.Text != "" ||
		it.TextBytes != uint32(len(ArchivedSummaryText(sum))) || it.Trimmed || it.Tokens == 0 {
		t.Fatalf("recalled item (a reference): %v", it)
	}
	if !s.MemoryByReference() {
		t.Fatal("a context recalling a summary by reference is not MemoryByReference")
	}
	// Hydrate reads the summary from the swap; gone from it, the item and
	// its tokens are left out.
	cx := s.Context()
	swap := func(session, id string) (*memoryv1.Summary, bool) {
		return sum, session == cx.SessionId && id == sum.Id
	}
	var shown bool
	for _, m := range Hydrate(cx, Sources{Summary: swap}).Messages {
		if m.Layer == LayerRecalled && m.Id == "recalled:summary:"+sum.Id && m.Content == ArchivedSummaryText(sum) && m.Tokens == it.Tokens {
			shown = true
		}
	}
	if !shown {
		t.Fatalf("hydrated recalled layer: %v", Hydrate(cx, Sources{Summary: swap}).Messages)
	}
	gone := Hydrate(cx, Sources{})
	for _, m := range gone.Messages {
		if m.Id == "recalled:summary:"+sum.Id {
			t.Fatal("a summary gone from the swap is still in the context")
		}
	}
	if gone.Layers.Recalled != cx.Layers.Recalled-it.Tokens || gone.Usage.Used != cx.Usage.Used-it.Tokens {
		t.Fatalf("tokens of the left-out summary still counted: %v vs %v", gone.Layers, cx.Layers)
	}
	// Time travel: from the session's log, or marked not kept.
	past := HydrateAtWith(cx, nil, nil, func(id string) (*memoryv1.Summary, bool) { return sum, id == sum.Id })
	if !strings.Contains(layerOf(past, LayerRecalled), ArchivedSummaryText(sum)) {
		t.Fatalf("time travel: %q", layerOf(past, LayerRecalled))
	}
	if got := layerOf(HydrateAt(cx, nil, nil), LayerRecalled); !strings.Contains(got, "[not kept] archived summary "+sum.Id) {
		t.Fatalf("time travel without the summary: %q", got)
	}

	off, sum := archivedSession(t, nil) // the default: off
	if k, _ := off.CandidateKey(); k.Summaries {
		t.Fatalf("candidate key without archived_summaries: %+v", k)
	}
	c = &Candidates{Summaries: []*memoryv1.Summary{sum}}
	if ev := assembledEvent(appendWith(t, off, c, user("Who owns the staging database password?"))); ev != nil && len(ev.Sections.Recalled) != 0 {
		t.Fatalf("offered without archived_summaries: %v", ev.Sections.Recalled)
	}
}

// TestOfferHits splits a search's hits: messages to Recall (the session's
// own without a session), summaries of the session to Summaries.
func TestOfferHits(t *testing.T) {
	m1, m2 := &memoryv1.Message{Id: "m1", Seq: 1, Content: "the owner is Priya"}, &memoryv1.Message{Id: "m2", Seq: 2, Content: "in Porto"}
	sum := &memoryv1.Summary{Id: "s1", Text: "Priya owns it"}
	var c Candidates
	c.OfferHits("a", []*memoryv1.SearchHit{
		{SessionId: "a", Summary: sum, Score: 4},
		{SessionId: "a", Message: m1, Score: 3},
		{SessionId: "b", Message: m2, Score: 2},
		{SessionId: "b", Summary: &memoryv1.Summary{Id: "x"}, Score: 1},
	}, 5)
	if len(c.Recall) != 2 || c.Recall[0] != m1 || c.RecallSessions[0] != "" || c.RecallSessions[1] != "b" || c.RecallScores[1] != 2 {
		t.Fatalf("recall: %v %v %v", c.Recall, c.RecallSessions, c.RecallScores)
	}
	if len(c.Summaries) != 1 || c.Summaries[0] != sum || c.SummaryScores[0] != 4 {
		t.Fatalf("summaries: %v %v", c.Summaries, c.SummaryScores)
	}
}

func layerOf(cx *memoryv1.ContextReply, layer string) string {
	var b strings.Builder
	for _, m := range cx.GetMessages() {
		if m.GetLayer() == layer {
			b.WriteString(m.GetContent())
			b.WriteString("\n")
		}
	}
	return b.String()
}
