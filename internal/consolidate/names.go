package consolidate

import (
	"regexp"
	"strings"
)

// Names listed after the relatives or pets they name: "we've got two
// cats, Mochi and Pip", "I have two kids, Leo and Mia", or, answering
// "Do you have any pets?", "Two cats, Mochi and Pip." The first name is
// the relation's, each further one a second of its kind ("pet/cat/pip").

// namedListRE: a count or an article, a relation or an animal, then the
// names.
var namedListRE = regexp.MustCompile(`(?i:(?P<my>\b(?:my|our) (?:two |three |four |five )?)?(?:\b(?:a|an|one|two|three|four|five|\d) )?(?P<thing>` + relWord + `?)(?:s|es)?(?:,|:| -| —| are)? (?:called |named )?)(?P<v>)[A-Z][a-z]+(?:(?:,| and|, and) [A-Z][a-z]+)*(?:[.!,;]|$)`)

// haveListRE: the statement such a list follows ("we've got …").
var haveListRE = regexp.MustCompile(`(?i)^(?:\bI|\bwe) (?:have got|have|own|got) $`)

// askPetsRE: the other speaker asks for the user's pets or children.
var askPetsRE = regexp.MustCompile(`(?i)\b(?:do you have|have you got|got) (?:any )?(?:pets|kids|children|animals|a dog|a cat|dogs|cats)\b`)

// namedList reads the names a sentence lists after a relation or an
// animal it counts: in a statement of having them, or as the whole of a
// fragment answering a question of pets or children.
func (x *extractor) namedList(st *stmt) {
	s := st.text
	loc := namedListRE.FindStringSubmatchIndex(s)
	if loc == nil {
		return
	}
	head := strings.TrimSpace(trimLeading(s[:loc[0]]))
	mine := group(s, namedListRE, loc, "my") != ""
	answer := !mine && head == "" && st.first && st.q != nil && askPetsRE.MatchString(lastSentence(st.q.Text))
	if !answer && !mine && !haveListRE.MatchString(trimLeading(s[:loc[0]])) {
		return
	}
	if names := s[loc[2*namedListRE.SubexpIndex("v")]:loc[1]]; mine && !strings.Contains(names, " and ") && !strings.Contains(names, ",") {
		return // one name after "my dog" is rel-named's
	}
	if hedged(s, loc[0], false) {
		return
	}
	thing := relSubject(group(s, namedListRE, loc, "thing"))
	if thing == "" || outsider(thing) {
		return
	}
	names := strings.FieldsFunc(s[loc[2*namedListRE.SubexpIndex("v")]:loc[1]], func(r rune) bool { return r == ',' || r == ' ' || r == '.' || r == '!' || r == ';' })
	for _, n := range names {
		if n == "and" || notNameWords[strings.ToLower(n)] || isDateWord(n) {
			continue
		}
		f := Fact{Subject: x.named(thing, n, st), Attribute: "name", Value: n, Type: Semantic, Confidence: 0.75, Rule: "named-list"}
		if answer {
			f.MessageIDs, f.Context = []string{st.q.ID, st.m.ID}, strings.TrimSpace(lastSentence(st.q.Text))+" "+st.said
		}
		x.add(st, f)
	}
}
