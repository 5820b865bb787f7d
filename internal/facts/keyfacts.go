package facts

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Counts counts the key facts of a unit's words.
type Counts struct {
	IDs   int  // INV-4471, T-100, #123, a1b2, v2.3.1; API-GATEWAY, audit_logs
	Nums  int  // 42, 12.50, 324,500, 30%
	Names int  // distinct capitalized words inside the unit (not months or days)
	Date  bool // an ISO date, a time of day, or a number beside a month
}

// KeyFacts counts the ids, numbers and names of s, and whether it holds a
// date. Numbers that are part of a date (the day and year beside a month,
// 2025-04-15, 09:53) count as the date, not as numbers.
func KeyFacts(s string) Counts {
	var f Counts
	words := strings.Fields(s)
	month := make([]bool, len(words))
	for i, w := range words {
		lw := strings.ToLower(strings.Trim(w, ".,;:!?()[]{}\"'`"))
		month[i] = slices.Contains(DateWords, lw) || w == "May"
	}
	nearMonth := func(i int) bool {
		return (i > 0 && month[i-1]) || (i+1 < len(words) && month[i+1]) || (i > 1 && month[i-2])
	}
	names := map[string]bool{}
	for i, raw := range words {
		w := strings.Trim(raw, ".,;:!?()[]{}\"'`")
		if w == "" {
			continue
		}
		var letters, digits, joins, colons int
		for _, r := range w {
			switch {
			case unicode.IsLetter(r):
				letters++
			case unicode.IsDigit(r):
				digits++
			case r == '-' || r == '_' || r == '#' || r == '/':
				joins++
			case r == ':':
				colons++
			}
		}
		switch {
		case digits == 0:
			if joins > 0 && letters > 0 && (IsUpperID(w) || IsSnake(w)) {
				f.IDs++ // API-GATEWAY, ACME_PROD, audit_logs
				continue
			}
			if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) && i > 0 && w != "I" && !strings.HasPrefix(w, "I'") && !month[i] {
				if p := words[i-1]; !strings.HasSuffix(p, ".") && !strings.HasSuffix(p, ":") {
					names[strings.ToLower(w)] = true
				}
			}
		case letters == 0 && (IsISODate(w) || (colons == 1 && digits <= 4)):
			f.Date = true // 2025-04-15, 09:53
		case letters == 0 && nearMonth(i) && len(w) <= 4:
			f.Date = true // 3 March 2025
		case strings.HasPrefix(w, "#") || (letters > 0 && !IsUnitSuffix(w)):
			f.IDs++
		default:
			f.Nums++
		}
	}
	f.Names = len(names)
	return f
}

// Of returns KeyFacts(s), whether s names a date (a date, a month, or
// "May" as one) and whether it carries any key fact; lower is s lower-cased.
func Of(s, lower string) (f Counts, date, fact bool) {
	f = KeyFacts(s)
	date = f.Date || ContainsAny(lower, DateWords) || HasMay(s)
	return f, date, f.IDs+f.Nums+f.Names > 0 || date
}

// HasKeyFact reports whether s carries an id, a number, a name or a date
// (see KeyFacts; a name is a capitalized word not starting s).
func HasKeyFact(s string) bool {
	_, _, fact := Of(s, strings.ToLower(s))
	return fact
}

// HasMay: "May" as a month (capitalized, not starting the sentence, or
// followed by a number).
func HasMay(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "May ")
		if j < 0 {
			return false
		}
		j += i
		rest := s[j+4:]
		if j > 0 || (rest != "" && rest[0] >= '0' && rest[0] <= '9') {
			return true
		}
		i = j + 1
	}
}

// IsISODate: 2025-04-15.
func IsISODate(w string) bool {
	if len(w) != 10 || w[4] != '-' || w[7] != '-' {
		return false
	}
	for i, r := range w {
		if i != 4 && i != 7 && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// IsUpperID: an all-capitals token joined by - or _ (PROJ-X, US_EAST).
func IsUpperID(w string) bool {
	upper := 0
	for _, r := range w {
		if unicode.IsLower(r) {
			return false
		}
		if unicode.IsUpper(r) {
			upper++
		}
	}
	return upper >= 2
}

// IsSnake: letters joined by underscores (audit_logs, get_invoice).
func IsSnake(w string) bool {
	i := strings.IndexByte(w, '_')
	return i > 0 && i < len(w)-1 && !strings.ContainsFunc(w, func(r rune) bool {
		return !unicode.IsLetter(r) && r != '_'
	})
}

// IsUnitSuffix: a number with a unit (10k, 5ms, 3x, 2nd, 12pm, 40GB) is a
// number, not an id.
func IsUnitSuffix(w string) bool {
	i := strings.IndexFunc(w, unicode.IsLetter)
	if i <= 0 || strings.ContainsFunc(w[:i], unicode.IsLetter) {
		return false
	}
	switch strings.ToLower(w[i:]) {
	case "k", "m", "b", "ms", "s", "h", "x", "st", "nd", "rd", "th", "am", "pm", "kb", "mb", "gb", "tb",
		"min", "mins", "hrs", "km", "kg", "g", "eur", "usd", "d", "w", "y", "yr", "yrs", "px", "pt":
		return true
	}
	return false
}

// IsCapitalized reports whether w starts with an upper-case letter.
func IsCapitalized(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}
