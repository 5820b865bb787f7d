package segmented

import (
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func messages(msgs ...*memoryv1.MessageInput) []*memoryv1.L1Entry {
	out := make([]*memoryv1.L1Entry, len(msgs))
	for i, in := range msgs {
		out[i] = &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Message{Message: &memoryv1.Message{
			Id: in.Id, Seq: uint64(i + 1), Role: in.Role, Content: in.Content, ToolCalls: in.ToolCalls, ToolCallId: in.ToolCallId,
		}}}
	}
	return out
}

func conversation() []*memoryv1.L1Entry {
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
		"cheapest carrier to Lisbon?",   // the user's question
		"we decided to go with Correos", // a decision
		"12.50",                         // numbers
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
	// The policy never passes a summary to Summarize; another caller may,
	// and its lines count like the messages'.
	mixed := append([]*memoryv1.L1Entry{{Entry: &memoryv1.L1Entry_Summary{Summary: sums[1]}}}, messages(user("Is invoice INV-77 paid?"))...)
	if out := (Extractive{}).Summarize(mixed, 60, tok); !strings.Contains(out, "Margaret Hamilton") || !strings.Contains(out, "INV-77") {
		t.Fatalf("summary of a summary and a message:\n%s", out)
	}
}

// TestExtractiveSalience: each kind of key fact is kept over filler, and
// filler is dropped even when there is room.
func TestExtractiveSalience(t *testing.T) {
	tok := tokenizerT(t)
	msgs := messages(
		user("Hi there! Thanks so much for your help yesterday, really appreciated. How are you doing?"),
		assistant("Hello! I'm doing well, thank you. Happy to help. "+
			"Well, after going back and forth with the team for quite a while and weighing all of the options we had on the table, we decided to use Postgres for the ledger. "+
			"There are a few ways to think about it, and each of them has its own trade-offs. "+
			"Ticket LEDGER-204 tracks the migration, and Priya Raman will own it. "+
			"The budget is 48,000 EUR and the cutover is on March 14."),
		user("Great. Should we also move the audit logs?"),
		assistant("", call("c9", "sql")),
		toolResult("c9", "status: error\nrelation audit_logs does not exist\nrow 1: x=1\nrow 2: x=2\nrow 3: x=3"),
		assistant("The query failed, so the audit logs stay where they are for now. Sounds good? Let me know if anything else comes up."),
	)
	out := Extractive{}.Summarize(msgs, 400, tok)
	for _, want := range []string{
		"decided to use Postgres for ledger", // a decision, its clause trimmed
		"LEDGER-204",                         // an id
		"Priya Raman will own it",            // a name, a commitment
		"48,000 EUR",                         // a number
		"March 14",                           // a date
		"Should we also move audit logs?",    // an open question
		"status: error",                      // a tool outcome
		"row 1: x=1 (+2 more like it)",       // rows of data: the first stands for the rest
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lost %q:\n%s", want, out)
		}
	}
	for _, filler := range []string{"Hi there", "Thanks so much", "Happy to help", "trade-offs", "back and forth", "Let me know", "row 2"} {
		if strings.Contains(out, filler) {
			t.Errorf("summary kept filler %q:\n%s", filler, out)
		}
	}
	if n, covered := tok.Count(out), tok.Count(strings.Join(contents(msgs), " ")); n*2 > covered {
		t.Errorf("summary of %d tokens for %d covered: filler not dropped:\n%s", n, covered, out)
	}
	// Pure small talk still gives a (short) summary.
	small := Extractive{}.Summarize(messages(user("Hi! How are you?"), assistant("Great, thanks! And you?")), 100, tok)
	if small == "" || tok.Count(small) > 12 {
		t.Errorf("small talk summary %q", small)
	}
}

// TestExtractiveDeduplicates: a fact repeated across messages is kept once.
func TestExtractiveDeduplicates(t *testing.T) {
	tok := tokenizerT(t)
	msgs := messages(
		user("The invoice INV-881 is overdue by 12 days."),
		assistant("Right, the invoice INV-881 is overdue by 12 days."),
		assistant("To recap: the invoice INV-881 is overdue by 12 days. I will call Dana on Monday."),
	)
	out := Extractive{}.Summarize(msgs, 200, tok)
	if n := strings.Count(out, "INV-881"); n != 1 || !strings.Contains(out, "call Dana on Monday") {
		t.Fatalf("INV-881 %d times:\n%s", n, out)
	}
}

func contents(es []*memoryv1.L1Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.GetMessage().GetContent())
	}
	return out
}
