package segmented

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// queryWords returns the content words of a user message, each once and
// sorted, in buf: the words of facts.ContentWords (lower-cased, split at
// whatever is not a letter, a digit, '-' or '.', trimmed of '-' and '.',
// longer than two bytes or holding a digit), as a list. The planner only
// iterates the message's words and counts them, and building the set as a
// map was a tenth of the plan for a message of a dozen words.
func queryWords(s string, buf []string) []string {
	if isASCII(s) {
		return asciiQueryWords(s, buf)
	}
	lower := strings.ToLower(s)
	out := buf[:0]
	start := -1 // the start of the current field, -1 between fields
	for i := 0; i <= len(lower); {
		r, size := rune(-1), 1 // -1: the end, a separator
		if i < len(lower) {
			if c := lower[i]; c < utf8.RuneSelf {
				r = rune(c)
			} else {
				r, size = utf8.DecodeRuneInString(lower[i:])
			}
		}
		if r >= 0 && inWord(r) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			if w := strings.Trim(lower[start:i], "-."); len(w) > 2 || strings.ContainsFunc(w, unicode.IsDigit) {
				out = append(out, w)
			}
			start = -1
		}
		i += size
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// asciiQueryWords is queryWords of ASCII text: lowered word by word (a
// word of lower-case letters is a substring of s), so a message is not
// copied whole.
func asciiQueryWords(s string, buf []string) []string {
	out := buf[:0]
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && inWord(rune(s[i])) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if w := strings.Trim(s[start:i], "-."); len(w) > 2 || strings.ContainsFunc(w, unicode.IsDigit) {
				out = append(out, strings.ToLower(w))
			}
			start = -1
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// isASCII reports whether s holds ASCII bytes only.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// inWord reports whether r is part of a content word (facts.ContentWords).
func inWord(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '.'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// sharedWords returns how many of the words q (each once) words holds.
func sharedWords(q []string, words map[string]bool) int {
	n := 0
	for _, w := range q {
		if words[w] {
			n++
		}
	}
	return n
}
