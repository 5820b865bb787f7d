package inspector

import (
	"html/template"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestDiffLines(t *testing.T) {
	render := func(d []diffLine) string {
		var b strings.Builder
		for _, l := range d {
			b.WriteString(l.Op + l.Text + "|")
		}
		return b.String()
	}
	for _, c := range []struct{ a, b, want string }{
		{"", "x", ""},
		{"a\nb\nc", "a\nb\nc", " a| b| c|"},
		{"a\nb\nc", "a\nc", " a|-b| c|"},
		{"a\nc", "a\nb\nc", " a|+b| c|"},
		{"Lyon\nemail", "Paris\nemail\nVIP", "-Lyon|+Paris| email|+VIP|"},
	} {
		if got := render(diffLines(c.a, c.b)); got != c.want {
			t.Errorf("diff %q → %q: %s, want %s", c.a, c.b, got, c.want)
		}
	}
	// Past the bound the value is one replaced block, not a quadratic table.
	long := strings.Repeat("x\n", maxDiffLines+1)
	if d := diffLines(long, "y"); len(d) != maxDiffLines+3 {
		t.Errorf("long diff has %d lines", len(d))
	}
}

func TestHighlight(t *testing.T) {
	for _, c := range []struct{ text, query, want string }{
		{"The refunds were sent.", "refund", "The <mark>refunds</mark> were sent."},
		{"Order A-1013 <b>", "order 1013", "<mark>Order</mark> A-<mark>1013</mark> &lt;b&gt;"},
		{"the cat and the dog", "the dog", "the cat and the <mark>dog</mark>"}, // stop words are not marked
		{"nothing here", "", "nothing here"},
	} {
		if got := string(highlight(c.text, c.query)); got != c.want {
			t.Errorf("highlight(%q, %q) = %q, want %q", c.text, c.query, got, c.want)
		}
	}
}

// An event type this page does not know (one added later, as an erasure)
// shows by its type name.
func TestDescribeBatchUnknownType(t *testing.T) {
	known, err := anypb.New(&memoryv1.MessagesAppended{Messages: []*memoryv1.Message{{Seq: 3, Role: memoryv1.Role_ROLE_USER, Tokens: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := anypb.New(structpb.NewStringValue("x"))
	if err != nil {
		t.Fatal(err)
	}
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/agentmem.memory.v1.SessionErased", Value: []byte{}}
	row := describeBatch(42, &memoryv1.EventBatch{Version: 5, Events: []*anypb.Any{known, other, unknown}})
	if row.Seq != 42 || len(row.Events) != 3 {
		t.Fatalf("row %+v", row)
	}
	if e := row.Events[0]; e.Type != "MessagesAppended" || len(e.Msgs) != 1 || e.Msgs[0].N != 3 || e.Msgs[0].Role != "user" || e.Msgs[0].Tokens != 7 {
		t.Errorf("known event: %+v", e)
	}
	if e := row.Events[2]; e.Type != "SessionErased" || e.Detail != "" {
		t.Errorf("unknown event: %+v", e)
	}
	if row.Kind != "erase" {
		t.Errorf("kind %q, want erase", row.Kind)
	}
}

// FuzzHighlight: whatever the text and the query, the highlighted HTML is
// the text, escaped, with only <mark> tags added.
func FuzzHighlight(f *testing.F) {
	f.Add("Order A-1013 <b>arrived</b> & was refunded", "refund 1013")
	f.Add("O'Brien's customer_id: 3706", "customer-id O'Brien")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, text, query string) {
		out := string(highlight(text, query))
		plain := strings.NewReplacer("<mark>", "", "</mark>", "").Replace(out)
		// Invalid UTF-8 bytes show as U+FFFD, one each.
		if plain != template.HTMLEscapeString(string([]rune(text))) {
			t.Fatalf("highlight(%q, %q) = %q: not the escaped text with marks", text, query, out)
		}
		if strings.Count(out, "<mark>") != strings.Count(out, "</mark>") {
			t.Fatalf("unbalanced marks: %q", out)
		}
	})
}
