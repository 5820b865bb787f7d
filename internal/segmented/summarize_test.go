package segmented

import (
	"fmt"
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
		toolResult("c9", "status: error\nrelation audit_logs does not exist\nrow 1: x=1\nrow 2: x=2\nrow 3: x=3\nrow 4: x=4\nrow 5: x=5"),
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
		"row 2: x=2 (+3 more like it)",       // rows of data: the first two stand for the rest
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lost %q:\n%s", want, out)
		}
	}
	for _, filler := range []string{"Hi there", "Thanks so much", "Happy to help", "trade-offs", "back and forth", "Let me know", "row 3"} {
		if strings.Contains(out, filler) {
			t.Errorf("summary kept filler %q:\n%s", filler, out)
		}
	}
	if n, covered := tok.Count(out), tok.Count(strings.Join(contents(msgs), " ")); n*3 > covered*2 {
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

// TestExtractiveJSONToolResult: a JSON tool result is read field by field,
// so its key facts are kept without the rest of the object.
func TestExtractiveJSONToolResult(t *testing.T) {
	tok := tokenizerT(t)
	msgs := messages(
		user("Look up Dunmore Textiles for me, please."),
		assistant("", call("c1", "lookup_customer")),
		toolResult("c1", `{"customer_id":"CUS-46686","name":"Dunmore Textiles","tier":"silver","region":"ap-south","account_manager":"Noor Dlamini","open_balance":"59,417.49 USD","open_tickets":2,"contract":"annual","notes":"prefers email, invoices in English","orders":[{"id":"ORD-1","total":"10.00 USD"},{"id":"ORD-2","total":"20.00 USD"},{"id":"ORD-3","total":"30.00 USD"},{"id":"ORD-4","total":"40.00 USD"}]}`),
		assistant("I found Dunmore Textiles in the ap-south region."),
	)
	out := Extractive{}.Summarize(msgs, 120, tok)
	for _, want := range []string{"customer_id: CUS-46686", "account_manager: Noor Dlamini", "open_balance: 59,417.49 USD", "orders[0]: id=ORD-1, total=10.00 USD", fmt.Sprintf("(+%d more like it)", 4-maxRowsKept)} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lost %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tier") || strings.Contains(out, "contract") {
		t.Errorf("summary kept fields without a key fact:\n%s", out)
	}
	if lines, ok := jsonLines(`{"a":1} {"b":2}`); ok {
		t.Errorf("two values read as one: %v", lines)
	}
	if lines, ok := jsonLines(`[1, "two", null, true]`); !ok || len(lines) != 1 || lines[0] != "items: 1, two, null, true" {
		t.Errorf("array of scalars: %v %v", lines, ok)
	}
	if _, ok := jsonLines(strings.Repeat("[", 100) + strings.Repeat("]", 100)); ok {
		t.Error("nesting beyond maxJSONDepth accepted")
	}
}

// FuzzSummarize: any message content (prose, JSON, tool output) gives a
// deterministic summary within the limit, and never panics.
func FuzzSummarize(f *testing.F) {
	for _, seed := range []string{
		"We decided to use Postgres. Ticket LEDGER-204, due March 14!",
		`{"customer_id":"CUS-1","orders":[{"id":"ORD-1"},{"id":"ORD-2"}],"n":[1,2,3]}`,
		"status: ok\nrow 1: x=1\nrow 2: x=2\nrow 3: x=3",
		"[[[[]]]]", `{"a":`, "Hi!", "", "(Monday 3 March 2025, 09:53) Hi again.",
	} {
		f.Add(seed, 40)
	}
	tok := tokenizerT(f)
	f.Fuzz(func(t *testing.T, content string, limit int) {
		limit = 1 + abs(limit)%200
		msgs := messages(user(content), toolResultFor("c1", content), assistant(content+" "+content))
		out := Extractive{}.Summarize(msgs, limit, tok)
		if n := tok.Count(out); n > limit {
			t.Fatalf("%d tokens > limit %d: %q", n, limit, out)
		}
		if again := (Extractive{}).Summarize(msgs, limit, tok); again != out {
			t.Fatalf("not deterministic: %q then %q", out, again)
		}
	})
}

func toolResultFor(callID, content string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: callID, Content: content}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// TestExtractiveDenseAtFiveTimes: a span dense with facts (each stated once,
// among acknowledgements and small talk) keeps every fact value within a
// fifth of its tokens: a sentence that does not fit whole is kept in its
// short form ("budget: 324,500 EUR"), not dropped or cut off before its
// value.
func TestExtractiveDenseAtFiveTimes(t *testing.T) {
	tok := tokenizerT(t)
	msgs := messages(
		user("Finance approved 324,500 EUR as the budget for the Orion migration."),
		assistant("Got it, I'll keep that in mind."),
		user("The Quasar search rewrite lead is Annika Takahashi."),
		assistant("Thanks, I've written that down."),
		user("Any tips for staying focused in the afternoon?"),
		assistant("Nice, small wins like that make a week better."),
		user("I filed the login timeout bug on the Orion migration as ORN-6774."),
		assistant("Noted."),
		user("Our deadline for the Quasar search rewrite is 2025-04-15."),
		assistant("Understood, thanks for letting me know."),
		user("Someone brought cake to the office, best start of a day."),
		assistant("Ha, I hope the rest of the day is calmer. Try batching similar tasks together, it reduces the switching cost."),
		user("I'm thinking about taking a long weekend soon, the last weeks were a lot."),
		assistant("That happens to everyone. A short walk usually helps more than another coffee."),
	)
	covered := 0
	for _, c := range contents(msgs) {
		covered += tok.Count(c) + MessageOverheadTokens
	}
	limit := covered / 5
	out := Extractive{}.Summarize(msgs, limit, tok)
	if n := tok.Count(out); n > limit {
		t.Fatalf("%d tokens > limit %d:\n%s", n, limit, out)
	}
	for _, want := range []string{"324,500 EUR", "Annika Takahashi", "ORN-6774", "2025-04-15"} {
		if !strings.Contains(out, want) {
			t.Errorf("limit %d of %d covered: summary lost %q:\n%s", limit, covered, want, out)
		}
	}
	for _, filler := range []string{"keep that in mind", "tips", "small wins"} {
		if strings.Contains(out, filler) {
			t.Errorf("summary kept filler %q:\n%s", filler, out)
		}
	}
}

// TestShortForm: the short and core forms of a unit keep its key facts in
// fewer words, readable: a copula before a value becomes ": ", a label
// without a fact goes, a replaced value ("instead of") goes.
func TestShortForm(t *testing.T) {
	for _, tc := range []struct{ in, short string }{
		{"Quasar search rewrite lead is Annika Takahashi.", "Quasar search rewrite lead: Annika Takahashi"},
		{"For record: budget for Orion migration is 324,500 EUR.", "budget for Orion migration: 324,500 EUR"},
		{"We changed our mind on Vega: payment provider will be Stripe instead of Worldpay.", "changed mind on Vega, payment provider: Stripe"},
		{"The Vega data pipeline has to be done by 2026-04-08.", "The Vega data pipeline done by 2026-04-08"},
		{"My employee number is EMP-55600, in case form needs it.", "employee number: EMP-55600"},
		{"Who leads Quasar search rewrite?", "Who leads Quasar search rewrite?"}, // questions stay whole
		{"We should keep it simple.", "We should keep it simple."},               // no key fact: as it is
	} {
		if got := shortForm(tc.in); got != tc.short {
			t.Errorf("shortForm(%q) = %q, want %q", tc.in, got, tc.short)
		}
	}
	if got := coreForm("Finance approved 324,500 EUR budget for Orion migration"); got != "approved 324,500 EUR budget Orion" {
		t.Errorf("coreForm = %q", got)
	}
}

// TestExtractiveKeepsNewestValue: when a later message in the span corrects
// a value, the summary keeps the new value and drops the statement it
// replaced; a second decision of the same kind that does not mark a change
// keeps both.
func TestExtractiveKeepsNewestValue(t *testing.T) {
	tok := tokenizerT(t)
	msgs := messages(
		user("The budget for the Orion migration is 300,000 EUR."),
		assistant("Noted."),
		user("The Quasar lead is Ada Byron."),
		user("Actually, the budget for the Orion migration is now 350,000 EUR."),
	)
	out := Extractive{}.Summarize(msgs, 200, tok)
	if !strings.Contains(out, "350,000 EUR") || strings.Contains(out, "300,000") || !strings.Contains(out, "Ada Byron") {
		t.Errorf("summary of a correction:\n%s", out)
	}
	both := Extractive{}.Summarize(messages(
		user("We decided to move billing jobs to Redis under ticket BILL-1."),
		user("We decided to move billing jobs to Kafka under ticket BILL-2."),
	), 200, tok)
	if !strings.Contains(both, "BILL-1") || !strings.Contains(both, "BILL-2") {
		t.Errorf("two decisions, one kept:\n%s", both)
	}
}

// TestExtractiveTopicsBeforeRepeats: when the limit holds only some units,
// a statement on a new topic goes before another of the same kind as one
// already kept.
func TestExtractiveTopicsBeforeRepeats(t *testing.T) {
	tok := tokenizerT(t)
	msgs := messages(
		user("We decided to move billing jobs to Redis under ticket BILL-1."),
		user("We decided to move billing jobs to Kafka under ticket BILL-2."),
		user("We decided to move billing jobs to Kubernetes under ticket BILL-3."),
		user("Marcus will own migration runbook RUN-6006, due on October 2."),
	)
	out := Extractive{}.Summarize(msgs, 40, tok)
	if !strings.Contains(out, "RUN-6006") || !strings.Contains(out, "BILL-1") {
		t.Errorf("summary:\n%s", out)
	}
}

// TestExtractiveAnsweredQuestion: a question answered in the span is
// context, not an open question: at a tight limit the answer's fact goes
// before it. An open question (nothing answers it) stays.
func TestExtractiveAnsweredQuestion(t *testing.T) {
	tok := tokenizerT(t)
	answered := messages(
		user("Can you tell me a short joke about computers?"),
		assistant("Why do programmers prefer dark mode? Because light attracts bugs."),
		user("Priya Castellanos will own the Orion migration."),
	)
	if out := (Extractive{}).Summarize(answered, 16, tok); !strings.Contains(out, "Priya Castellanos") || strings.Contains(out, "joke") {
		t.Errorf("answered question kept over a fact:\n%s", out)
	}
	open := messages(assistant("The report is ready."), user("Should we also move the audit logs?"))
	if out := (Extractive{}).Summarize(open, 40, tok); !strings.Contains(out, "move audit logs?") {
		t.Errorf("open question lost:\n%s", out)
	}
}
