package sharedmem

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSearchableValue(t *testing.T) {
	words := []byte(strings.Repeat("alphabet ", MaxIndexedValueBytes/4))
	blob := bytes.Repeat([]byte("é"), MaxIndexedValueBytes) // no whitespace, 2-byte runes
	for _, tc := range []struct {
		name, ct  string
		value     []byte
		indexed   int
		unindexed int
	}{
		{"small text", "text/plain", []byte("hello"), 5, 0},
		{"at the cap", "", words[:MaxIndexedValueBytes], MaxIndexedValueBytes, 0},
		{"binary", "image/png", words, 0, 0},
		// "alphabet " is 9 bytes: the cap falls inside a word; the cut is
		// at the space before it.
		{"cut at a space", "application/json; charset=utf-8", words, MaxIndexedValueBytes/9*9 - 1, len(words) - MaxIndexedValueBytes/9*9 + 1},
		{"cut at a rune", "TEXT/markdown", blob, MaxIndexedValueBytes, len(blob) - MaxIndexedValueBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rest := SearchableValue(tc.ct, tc.value)
			if len(got) != tc.indexed || rest != tc.unindexed {
				t.Fatalf("indexed %d, unindexed %d; want %d, %d", len(got), rest, tc.indexed, tc.unindexed)
			}
			if !utf8.Valid(got) {
				t.Fatalf("cut at %d is not a UTF-8 boundary", len(got))
			}
		})
	}
}
