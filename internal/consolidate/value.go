package consolidate

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/facts"
)

// kind is the shape a rule expects of its value.
type kind int

const (
	kPlace  kind = iota // capitalized words: Porto, New York, Rio de Janeiro
	kName               // capitalized words, at most three: Ana, Mara Silva, Acme Corp
	kPhrase             // a few words up to the first clause boundary: peanuts, green tea
	kMoney              // $450, 1,200 euros
)

// placeJoins may sit inside a place or an organization's name.
var placeJoins = map[string]bool{"de": true, "da": true, "do": true, "del": true, "la": true, "le": true, "of": true, "upon": true, "am": true, "on": true, "&": true}

// pronounValues are no value: "I love it", "I prefer that".
var pronounValues = map[string]bool{
	"it": true, "that": true, "this": true, "them": true, "those": true, "these": true, "you": true, "him": true,
	"her": true, "there": true, "one": true, "something": true, "anything": true, "everything": true,
	"nothing": true, "stuff": true, "things": true, "what": true, "how": true, "when": true, "to": true,
	"the idea": true, "so": true, "too": true, "all": true, "lots": true, "a lot": true, "most": true,
	"not": true, "your": true, "yours": true, "being": true, "having": true, "doing": true, "getting": true,
}

// boundaryRE ends a phrase value: punctuation, a conjunction or relative
// word, or a time phrase.
var boundaryRE = regexp.MustCompile(`(?i)[,;:.!?()"]|\s[-—–]\s|\s(?:and|but|because|so|since|which|who|when|where|while|though|although|as|if|until|after|before|for|with|at the moment|right now|these days|lately|recently|anymore|any more|now|too|yet|last|next|this|every|yesterday|today|tonight|tomorrow|ago|already|again|instead|over|than|rather|from|on|at|during|in order|a few|a couple|several)(?:[\s,;:.!?]|$)`)

// notNameWords are capitalized but no name.
var notNameWords = map[string]bool{"I": true, "I'm": true, "I've": true, "I'll": true, "I'd": true}

// phrase returns the value at the start of rest for kind k, "" if there is
// none of that shape.
func phrase(rest string, k kind) string {
	rest = strings.TrimSpace(rest)
	switch k {
	case kPlace, kName:
		return capitalized(rest, k)
	case kMoney:
		return money(rest)
	}
	if loc := boundaryRE.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	rest = strings.TrimSpace(rest)
	words := strings.Fields(rest)
	for len(words) > 0 {
		switch strings.ToLower(words[0]) {
		case "a", "an", "the", "some", "my", "our", "really", "very", "just", "so", "totally", "absolutely":
			words = words[1:]
			continue
		}
		break
	}
	if len(words) == 0 || len(words) > 6 {
		return ""
	}
	v := strings.Join(words, " ")
	if first := words[0]; !isAcronym(first) && (pronounValues[strings.ToLower(v)] || pronounValues[strings.ToLower(first)]) {
		return ""
	}
	for _, w := range words { // about the assistant, not the user
		if lw := strings.ToLower(strings.Trim(w, "'’")); lw == "you" || lw == "your" || lw == "yours" {
			return ""
		}
	}
	return v
}

// capitalized returns the run of capitalized words (with joins such as
// "de" inside) at the start of s.
func capitalized(s string, k kind) string {
	words := strings.Fields(s)
	if len(words) > 1 && strings.EqualFold(words[0], "the") && isCap(words[1]) {
		words = words[1:] // the Netherlands, the US
	}
	var out []string
	for i, w := range words {
		t := strings.TrimRight(w, ".,;:!?)\"'’")
		end := t != w
		t = strings.TrimSuffix(strings.TrimSuffix(t, "'s"), "’s")
		switch {
		case isCap(t) && !notNameWords[t] && !isDateWord(t):
			out = append(out, t)
		case len(out) > 0 && placeJoins[t] && !end && i+1 < len(words) && isCap(words[i+1]) && !isDateWord(strings.Trim(words[i+1], ".,;:!?")):
			out = append(out, t)
		default:
			end = true
		}
		if end {
			break
		}
	}
	for len(out) > 0 && placeJoins[out[len(out)-1]] {
		out = out[:len(out)-1]
	}
	max := 4
	if k == kName {
		max = 3
	}
	if len(out) == 0 || len(out) > max {
		return ""
	}
	return strings.Join(out, " ")
}

// isAcronym: IT, UX, QA (not the pronoun "it").
func isAcronym(w string) bool {
	return len(w) >= 2 && strings.ToUpper(w) == w && strings.ToLower(w) != w
}

func isCap(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}

func isDateWord(w string) bool {
	lw := strings.ToLower(w)
	for _, d := range facts.DateWords {
		if lw == d {
			return true
		}
	}
	return false
}

var moneyRE = regexp.MustCompile(`^(?:[$€£]\s?\d[\d,]*(?:\.\d+)?k?|\d[\d,]*(?:\.\d+)?k?\s?(?:dollars|euros|eur|usd|bucks|pounds|gbp|€|£))`)

// money returns the amount at the start of s.
func money(s string) string {
	return strings.TrimSpace(moneyRE.FindString(strings.TrimSpace(s)))
}

// moneyAnyRE finds an amount anywhere.
var moneyAnyRE = regexp.MustCompile(`[$€£]\s?\d[\d,]*(?:\.\d+)?k?|\b\d[\d,]*(?:\.\d+)?k?\s?(?:dollars|euros|bucks|pounds)\b`)

// splitList splits a list value ("peanuts, shellfish and kiwi") into its
// items.
func splitList(rest string) []string {
	if loc := listEndRE.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	// "a, b and c" is a list; "a, by the way" is one item and an aside.
	if i := strings.IndexByte(rest, ','); i >= 0 && !andOrRE.MatchString(rest[i:]) {
		rest = rest[:i]
	}
	var out []string
	for _, p := range listSepRE.Split(rest, -1) {
		if f := strings.Fields(strings.ToLower(p)); len(f) > 0 && subjectWords[f[0]] {
			break // "dairy and I don't like …": a new clause, not an item
		}
		if v := phrase(p, kPhrase); v != "" {
			out = append(out, v)
		}
		if len(out) == 5 {
			break
		}
	}
	return out
}

// subjectWords start a clause, not a list item.
var subjectWords = map[string]bool{"i": true, "i'm": true, "i’m": true, "we": true, "we're": true, "he": true, "she": true,
	"they": true, "it": true, "it's": true, "that": true, "this": true, "there": true, "you": true}

// topic returns the content words of a decision's value without its
// dates, numbers and names: "ship the release on Friday" → "ship_release".
func topic(v string) string { return topicOf(v, false) }

// topicOf is topic, keeping names when names is set ("reply in English" →
// "reply_english").
func topicOf(v string, names bool) string {
	var out []string
	for i, w := range strings.Fields(v) {
		t := strings.Trim(w, ".,;:!?\"'")
		lw := strings.ToLower(t)
		r, _ := utf8.DecodeRuneInString(t)
		if t == "" || strings.ContainsFunc(t, unicode.IsDigit) || isDateWord(t) || (i > 0 && unicode.IsUpper(r) && !names) ||
			stopWords[lw] || moneyRE.MatchString(t) {
			continue
		}
		out = append(out, lw)
		if len(out) == 2 {
			break
		}
	}
	if len(out) == 0 {
		return ""
	}
	return slug(strings.Join(out, " "))
}

var stopWords = map[string]bool{
	"the": true, "a": true, "an": true, "on": true, "in": true, "at": true, "by": true, "to": true, "for": true,
	"of": true, "with": true, "it": true, "we": true, "our": true, "my": true, "and": true, "or": true, "is": true,
	"be": true, "this": true, "that": true, "next": true, "until": true, "from": true, "before": true, "after": true,
	"instead": true, "then": true, "just": true, "all": true,
}

// shapeOf classifies a value for corrections: money, a number, a
// capitalized name, or a phrase.
func shapeOf(v string) kind {
	switch {
	case moneyRE.MatchString(v):
		return kMoney
	case capitalized(v, kPlace) == v:
		return kName
	}
	return kPhrase
}

// Patterns used above, compiled once.
var (
	listEndRE = regexp.MustCompile(`[.;:!?()]`)
	andOrRE   = regexp.MustCompile(`(?i)\s(?:and|or)\s`)
	listSepRE = regexp.MustCompile(`,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+`)
)
