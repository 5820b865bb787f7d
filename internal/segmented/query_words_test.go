package segmented

import (
	"slices"
	"testing"

	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/facts"
	"pgregory.net/rapid"
)

// sortedKeys returns the words of a ContentWords set, sorted.
func sortedKeys(m map[string]bool) []string {
	var out []string
	for w := range m {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// TestQueryWordsMatchesContentWords: queryWords lists the words of
// facts.ContentWords, on text of letters of several scripts and cases,
// digits, separators, '-', '.', combining marks and invalid UTF-8, and on
// a generated conversation's messages.
func TestQueryWordsMatchesContentWords(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, s string) {
		if got, want := queryWords(s, nil), sortedKeys(facts.ContentWords(s)); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("queryWords(%q) = %q, want %q", s, got, want)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		alphabet := []rune{'a', 'B', 'z', 'É', 'é', 'İ', 'ß', 'Σ', 'ς', 'ж', '語', '٣', '7', '0', '-', '.', ' ', ',', '?', '\n', '\u0307', '\u00a0', 0xFFFD}
		s := rapid.StringOf(rapid.SampledFrom(alphabet)).Draw(rt, "s")
		if rapid.Bool().Draw(rt, "invalid") {
			s += "\xff\xfeab1" + s
		}
		check(rt, s)
	})
	// ASCII text (lowered word by word): upper case, digits, '-' and '.'
	// at the ends of words and inside them.
	rapid.Check(t, func(rt *rapid.T) {
		alphabet := []rune{'a', 'B', 'z', 'Q', 'e', '7', '0', '-', '.', ' ', ',', '?', '\n', '_', '\'', 'I'}
		check(rt, rapid.StringOf(rapid.SampledFrom(alphabet)).Draw(rt, "s"))
	})
	conv, err := convgen.Generate(convgen.Config{Seed: 3, Sittings: 1, MessagesPerSitting: 300, CheckpointsPerSitting: 1, StartUnixNano: 1_740_960_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range conv.Messages {
		check(t, m.Content)
	}
}
