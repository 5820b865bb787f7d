package swap

import (
	"slices"
	"testing"
)

func TestExpand(t *testing.T) {
	has := func(q string, want ...string) {
		t.Helper()
		got := Expand(QueryTerms(q))
		for _, w := range QueryTerms(want[0]) {
			if !slices.Contains(got, w) {
				t.Errorf("Expand(%q) = %v, lacks %q", q, got, w)
			}
		}
	}
	has("which instrument did she buy", "guitar")
	has("I bought a guitar", "instrument")
	has("what body part did he hurt", "wrist")
	// A member does not expand to its siblings; a lone word of a head
	// phrase does not expand.
	if got := Expand(QueryTerms("guitar")); slices.Contains(got, "piano") {
		t.Errorf("Expand(guitar) = %v: holds a sibling", got)
	}
	if got := Expand(QueryTerms("part")); slices.Contains(got, "wrist") {
		t.Errorf("Expand(part) = %v: a part of a head phrase expanded", got)
	}
	for _, q := range []string{"", "the and of", "zzzz qqqq"} {
		if got := Expand(QueryTerms(q)); len(got) != 0 {
			t.Errorf("Expand(%q) = %v, want none", q, got)
		}
	}
	if got := Expand(QueryTerms("job family pet music sport travel food health art hobby")); len(got) > MaxExpansions {
		t.Errorf("%d expansions, at most %d", len(got), MaxExpansions)
	}
}
