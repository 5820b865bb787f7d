package segmented

import (
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func messages(msgs ...*memoryv1.MessageInput) []*memoryv1.Message {
	out := make([]*memoryv1.Message, len(msgs))
	for i, in := range msgs {
		out[i] = &memoryv1.Message{
			Id: in.Id, Seq: uint64(i + 1), Role: in.Role, Content: in.Content, ToolCalls: in.ToolCalls, ToolCallId: in.ToolCallId,
		}
	}
	return out
}

func conversation() []*memoryv1.Message {
	filler := strings.Repeat("this part of the reply is general chatter without much content. ", 20)
	return messages(
		user("hi there. can you help me with shipping? what is the cheapest carrier to Lisbon?"),
		assistant("sure. "+filler+"the cheapest carrier is Correos at 12.50 EUR per parcel. "+filler),
		user("ok. we decided to go with Correos for all 300 parcels. how long will it take?"),
		assistant("", call("c1", "eta")),
		toolResult("c1", filler),
		assistant(filler+"delivery takes about 4 days. "+filler),
	)
}

func TestExtractiveKeepsEssentials(t *testing.T) {
	tok := tokenizerT(t)
	es := conversation()
	out := Extractive{}.Summarize(es, 120, tok)
	if n := tok.Count(out); n > 120 {
		t.Fatalf("summary has %d tokens > 120:\n%s", n, out)
	}
	for _, want := range []string{
		"what is the cheapest carrier to Lisbon?", // the user's question
		"we decided to go with Correos",           // a decision
		"12.50",                                   // numbers
		"300",
		"4 days",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lost %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "general chatter") && strings.Count(out, "general chatter") > 2 {
		t.Errorf("summary kept filler:\n%s", out)
	}
}

func TestExtractiveDeterministicAndBounded(t *testing.T) {
	tok := tokenizerT(t)
	es := conversation()
	first := Extractive{}.Summarize(es, 80, tok)
	for range 20 {
		if again := (Extractive{}).Summarize(es, 80, tok); again != first {
			t.Fatalf("not deterministic:\n%s\n---\n%s", first, again)
		}
	}
	for _, max := range []int{1, 3, 8, 20, 50, 400} {
		out := Extractive{}.Summarize(es, max, tok)
		if n := tok.Count(out); n > max {
			t.Errorf("maxTokens %d: got %d tokens: %q", max, n, out)
		}
	}
	if out := (Extractive{}).Summarize(es, 0, tok); out != "" {
		t.Errorf("maxTokens 0: %q", out)
	}
	// One endless word cannot break the bound.
	huge := messages(user(strings.Repeat("x", 100000)))
	if out := (Extractive{}).Summarize(huge, 30, tok); tok.Count(out) > 30 {
		t.Errorf("huge word: %d tokens", tok.Count(out))
	}
}

func TestExtractiveCondenseKeepsNames(t *testing.T) {
	tok := tokenizerT(t)
	sums := []*memoryv1.Summary{
		{Id: "s1", FirstSeq: 1, LastSeq: 4, Text: "Summary of messages 1-4:\nUser: asked for the Q3 report."},
		{Id: "s2", FirstSeq: 5, LastSeq: 9, Text: "Summary of messages 5-9:\nAssistant: the report was written by Margaret Hamilton last week. it is long and detailed."},
	}
	out := Extractive{}.Condense(sums, 30, tok)
	if !strings.Contains(out, "Q3 report") || !strings.Contains(out, "Margaret Hamilton") || strings.Contains(out, "Summary of") {
		t.Fatalf("condensed summary lost a fact or kept a header:\n%s", out)
	}
}
