package consolidate

import (
	"regexp"
	"strings"
)

// Fragment answers: "Any allergies?" "Just shellfish."; "What do you do
// for fun?" "Mostly bouldering and some baking."; "Where do you live?"
// "york, up north". The question says what the fragment is of; the
// fragment gives only the value, often typed in lower case.

// fragmentLeadRE: words before a fragment's value that are no part of it.
var fragmentLeadRE = regexp.MustCompile(`(?i)^(?:(?:just|only|mainly|mostly|mostly just|a lot of|lots of|some|probably just|definitely|oh|well|um|yeah|yes|hmm)[,!]? )*`)

// noneRE: an answer that names nothing ("nope, none", "not really").
var noneRE = regexp.MustCompile(`(?i)^(?:no|nope|none|nothing|not really|not much|not that i know|nah)\b`)

// listAnswer reads the items a fragment lists in answer to a question of
// allergies or hobbies.
func (x *extractor) listAnswer(st *stmt, q, rest string) {
	if noneRE.MatchString(rest) {
		return
	}
	rest = rest[len(fragmentLeadRE.FindString(rest)):]
	if otherSubjectRE.MatchString(rest) || notAnswerNames[strings.ToLower(firstWord(rest))] {
		return // "Trying to stay sane, mostly.": no pastime named
	}
	kind, label := "hobby", "hobby"
	if askAllergyRE.MatchString(q) {
		kind, label = "allergy", ""
	}
	for _, v := range splitList(rest) {
		v = strings.TrimSpace(v[len(fragmentLeadRE.FindString(v)):])
		if v == "" || interjections[strings.ToLower(v)] || !pastimeLike(v) || noneRE.MatchString(v) {
			continue
		}
		attr := kind + "/" + slug(v)
		if kind == "hobby" {
			attr = kind + "/" + headSlug(v)
		}
		x.add(st, Fact{Subject: "user", Attribute: attr, Value: v, Type: Semantic, Confidence: 0.65, Rule: "answer", Label: label,
			MessageIDs: []string{st.q.ID, st.m.ID}, Context: strings.TrimSpace(q) + " " + st.said})
	}
}

// placeAnswer is the place a fragment names: its capitalized words, or,
// typed all in lower case, its first one or two words before a comma
// ("york, up north").
func placeAnswer(rest string) string {
	if v, _ := capitalized(rest, kPlace); v != "" {
		return v
	}
	if rest != strings.ToLower(rest) {
		return ""
	}
	head, _, _ := strings.Cut(rest, ",")
	var w []string
	for _, x := range strings.Fields(strings.Trim(head, ".!;")) {
		if npStop[x] || isDateWord(x) {
			break // "lisbon with my wife": the place ends at "with"
		}
		w = append(w, x)
	}
	if len(w) == 0 || len(w) > 2 {
		return ""
	}
	for _, x := range w {
		if npStop[x] || npSkip[x] || badStart[x] || interjections[x] || evaluative[x] || strings.ContainsAny(x, "0123456789") {
			return ""
		}
	}
	return strings.Join(w, " ")
}

// diets are the diets a fragment may name ("Vegetarian, mostly.").
var diets = set(`vegetarian vegan pescatarian keto kosher halal gluten-free celiac coeliac diabetic teetotal paleo`)

// pastimeLike: a fragment's item names a thing or an activity, not a
// stretch of time or a feeling ("work, mostly" names no pastime).
func pastimeLike(v string) bool {
	for _, w := range strings.Fields(strings.ToLower(v)) {
		if notEvent[w] || notLikeable[w] || w == "work" || w == "stuff" {
			return false
		}
	}
	return true
}

// firstWord is the first word of s, its punctuation trimmed.
func firstWord(s string) string {
	w := strings.Fields(s)
	if len(w) == 0 {
		return ""
	}
	return strings.Trim(w[0], ".,!;:")
}
