package facts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sentences splits text into trimmed sentences at ., ?, ! followed by
// a space, and at line breaks.
func Sentences(text string) []string {
	var out []string
	flush := func(s string) {
		s = strings.TrimSpace(s)
		s = strings.TrimLeft(s, "-*• ")
		if s != "" {
			out = append(out, s)
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			flush(text[start:i])
			start = i + 1
		case (c == '.' || c == '?' || c == '!') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n'):
			if c == '.' && i+1 < len(text) && text[i+1] == ' ' && titleBefore(text[start:i]) {
				continue // "St. Mary's", "Dr. Patel": a title, not a sentence's end
			}
			flush(text[start : i+1])
			start = i + 1
		}
	}
	flush(text[start:])
	return out
}

// titles end in a period that ends no sentence ("St. Mary's").
var titles = map[string]bool{"st": true, "dr": true, "mr": true, "mrs": true, "ms": true, "mt": true, "jr": true,
	"sr": true, "prof": true, "ave": true, "rd": true, "vs": true, "ft": true}

// titleBefore reports whether s ends in a title ("… at St").
func titleBefore(s string) bool {
	i := strings.LastIndexAny(s, " (\"")
	w := strings.ToLower(s[i+1:])
	return titles[w]
}

// Clauses splits a long sentence at , ; : and dashes (keeping numbers
// such as 1,200 or 10:30 whole).
func Clauses(s string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if c := strings.TrimSpace(s[start:end]); c != "" {
			out = append(out, strings.TrimRight(c, ",;:"))
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case (c == ',' || c == ';' || c == ':') && i+1 < len(s) && s[i+1] == ' ':
			flush(i + 1)
			start = i + 1
		case strings.HasPrefix(s[i:], " - ") || strings.HasPrefix(s[i:], " — "):
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return out
}

// ContainsWord reports whether w occurs in s delimited by non-letters.
func ContainsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before, _ := utf8.DecodeLastRuneInString(s[:j])
		after, _ := utf8.DecodeRuneInString(s[j+len(w):])
		if (j == 0 || !unicode.IsLetter(before)) && (j+len(w) == len(s) || !unicode.IsLetter(after)) {
			return true
		}
		i = j + 1
	}
}

// ContainsAny reports whether lower holds one of words as a word.
func ContainsAny(lower string, words []string) bool {
	for _, w := range words {
		if ContainsWord(lower, w) {
			return true
		}
	}
	return false
}

// StartsWithAny reports whether lower starts with one of words as a word.
func StartsWithAny(lower string, words []string) bool {
	for _, w := range words {
		if strings.HasPrefix(lower, w) && ContainsWord(lower[:len(w)+min(1, len(lower)-len(w))], w) {
			return true
		}
	}
	return false
}

// ContentWords returns the lower-cased words of s longer than two letters,
// for near-duplicate detection.
func ContentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '.'
	}) {
		w = strings.Trim(w, "-.")
		if len(w) > 2 || strings.ContainsFunc(w, unicode.IsDigit) {
			out[w] = true
		}
	}
	return out
}

// KeyTokens returns the tokens of s that carry facts: words with digits
// and capitalized words inside it (lower-cased, trimmed).
func KeyTokens(s string) []string {
	var out []string
	for i, w := range strings.Fields(s) {
		w = strings.Trim(w, ".,;:!?()[]{}\"'`")
		r, _ := utf8.DecodeRuneInString(w)
		if strings.ContainsFunc(w, unicode.IsDigit) || (i > 0 && unicode.IsUpper(r) && w != "I") {
			out = append(out, strings.ToLower(w))
		}
	}
	return out
}
