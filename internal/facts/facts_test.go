package facts

import (
	"io/fs"
	"slices"
	"testing"
)

// TestDataFilesRead reads every embedded list: each is non-empty, lower
// case, and used by a variable (a file nobody reads is dead data).
func TestDataFilesRead(t *testing.T) {
	used := map[string]bool{
		"decision.txt": true, "outcome.txt": true, "smalltalk.txt": true, "ack.txt": true,
		"greeting.txt": true, "dates.txt": true, "months.txt": true, "change.txt": true,
		"leading_filler.txt": true, "filler.txt": true, "weights.txt": true,
	}
	ents, err := fs.ReadDir(data, "data")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !used[e.Name()] {
			t.Errorf("data/%s is embedded but no variable reads it", e.Name())
		}
		if len(read(e.Name())) == 0 {
			t.Errorf("data/%s is empty", e.Name())
		}
	}
	if len(Months) != 12 {
		t.Fatalf("months.txt has %d months, want 12", len(Months))
	}
	if W.Decision != 30 || W.MinSalience != 10 || W.ToolCall != 12 {
		t.Fatalf("weights = %+v", W)
	}
	if !slices.Contains(LeadingFiller, "actually, ") || !FillerWords["thanks"] {
		t.Fatal("leading filler or filler words not read")
	}
}

func TestKeyFacts(t *testing.T) {
	cases := []struct {
		in   string
		want Counts
	}{
		{"Invoice INV-4471 is 42 EUR", Counts{IDs: 1, Nums: 1, Names: 1}},
		{"The call is on March 3 2025 at 10:30", Counts{Names: 0, Date: true}},
		{"We met Ana and Bruno in Porto", Counts{Names: 3}},
		{"I moved last month", Counts{}},
		{"audit_logs has 10k rows", Counts{IDs: 1, Nums: 1}},
	}
	for _, c := range cases {
		if got := KeyFacts(c.in); got != c.want {
			t.Errorf("KeyFacts(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
	if !HasKeyFact("ship on Friday") || HasKeyFact("sounds good to me") {
		t.Error("HasKeyFact: a weekday is a date, small talk is none")
	}
}

func TestMonthNumber(t *testing.T) {
	for in, want := range map[string]string{"january": "1", "sept": "9", "sep": "9", "dec": "12", "may": "5", "ma": "", "monday": ""} {
		if got := MonthNumber(in); got != want {
			t.Errorf("MonthNumber(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScore(t *testing.T) {
	if s := Score("Thanks, Alice!", true, false, false); s != 0 {
		t.Errorf("a thank-you scores %d, want 0 (filler)", s)
	}
	if s := Score("We decided to ship v2.3 on Friday", true, false, false); s < W.Decision {
		t.Errorf("a decision with a date and an id scores %d, want at least %d", s, W.Decision)
	}
	if got := Sentences("I moved. Where to? Porto!\nok"); len(got) != 4 {
		t.Errorf("Sentences = %q, want 4", got)
	}
	if got := Clauses("budget is 1,200, due 10:30; owner: Ana"); len(got) != 4 {
		t.Errorf("Clauses = %q, want 4", got)
	}
}

// TestSentencesTitles: a title's period ends no sentence.
func TestSentencesTitles(t *testing.T) {
	got := Sentences("I'm a nurse at St. Mary's so the night shifts are hard. Dr. Patel is my boss.")
	if len(got) != 2 || got[0] != "I'm a nurse at St. Mary's so the night shifts are hard." {
		t.Errorf("Sentences = %q, want 2 sentences, St. Mary's whole", got)
	}
}
