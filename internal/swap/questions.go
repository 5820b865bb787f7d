package swap

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// QuestionShare returns the share, in [0, 1], of the words of text that are
// in questions: sentences ending with a question mark. A sentence ends at
// '.' followed by white space, a quote or the end, '!', '?' (or their
// full-width forms) or a line break; words are runs of letters and
// digits. Text without words has a share of 0. It is a cheap reading of
// the surface: an abbreviation ("e.g. this") ends a sentence.
func QuestionShare(text string) float64 {
	total, asked, cur := 0, 0, 0
	inWord := false
	for i := 0; i < len(text); {
		r, n := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(text[i:])
		}
		i += n
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if !inWord {
				cur++
				inWord = true
			}
			continue
		}
		inWord = false
		switch r {
		case '?', '？':
			asked += cur
			total += cur
			cur = 0
		case '.', '!', '\n', '。', '！':
			// A period followed by a word character ("3.14", "v2.3",
			// "example.com") does not end a sentence.
			if r == '.' && i < len(text) && text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '"' {
				continue
			}
			total += cur
			cur = 0
		}
	}
	total += cur
	if total == 0 {
		return 0
	}
	return float64(asked) / float64(total)
}

// IsQuestion reports whether query reads as a question: it holds a
// question mark, or its first word is an English question word or an
// auxiliary verb that opens a question ("what", "who", "is", "did", ...).
func IsQuestion(query string) bool {
	if strings.IndexByte(query, '?') >= 0 {
		return true
	}
	first := ""
	forEachTerm(query, func(t string) {
		if first == "" {
			first = t
		}
	})
	_, ok := questionOpeners[first]
	return ok
}

// opensQuestion is IsQuestion for a query whose first term is known
// (ParseQuery has analyzed it already).
func opensQuestion(query, first string) bool {
	if strings.IndexByte(query, '?') >= 0 {
		return true
	}
	_, ok := questionOpeners[first]
	return ok
}

// questionOpeners are the terms of the words that open an English
// question.
var questionOpeners = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range []string{"what", "who", "whom", "whose", "which", "when", "where", "why", "how",
		"is", "are", "was", "were", "do", "does", "did", "can", "could", "will", "would", "should", "shall",
		"have", "has", "had", "may", "might", "must", "am"} {
		forEachTerm(w, func(t string) { m[t] = struct{}{} })
	}
	return m
}()
