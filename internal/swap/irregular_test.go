package swap

import (
	"slices"
	"testing"
)

// TestAnalyzeIrregularVerbs: the past forms of irregular verbs have the
// term of their base (the stemmer alone left "led" and "went" as they
// were), whatever their case; the forms left out keep their own term.
func TestAnalyzeIrregularVerbs(t *testing.T) {
	for form, base := range map[string]string{
		"led": "leads", "Went": "going", "WRITTEN": "writes", "bought": "buy", "ran": "running",
		"thought": "thinking", "found": "finds",
	} {
		if got, want := Analyze(form), Analyze(base); !slices.Equal(got, want) {
			t.Errorf("Analyze(%q) = %q, want %q (the term of %q)", form, got, want, base)
		}
	}
	for w, want := range map[string]string{"left": "left", "was": "was", "done": "done", "drew": "drew", "fed": "fed"} {
		if got := Analyze(w); !slices.Equal(got, []string{want}) {
			t.Errorf("Analyze(%q) = %q, want [%q]", w, got, want)
		}
	}
	// Every entry maps a form to a different base, and no form is the
	// base of another entry (one step reaches the base).
	for form, base := range irregularVerbs {
		if form == base {
			t.Errorf("%q maps to itself", form)
		}
		if _, ok := irregularVerbs[base]; ok {
			t.Errorf("%q → %q, itself a form", form, base)
		}
		if IsStopTerm(stemWord(form)) {
			t.Errorf("%q → %q: a stop term", form, stemWord(form))
		}
	}
}
