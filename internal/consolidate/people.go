package consolidate

import (
	"regexp"
	"strings"
)

// People and pets: the user's relatives and animals are subjects of their
// own ("son", "sister", "pet/beagle"). A subject is named in the sentence
// itself — "my son", "my sister Ana", "our beagle, Biscuit" — or by a
// name this conversation or memory already knows as one ("Leo turns 6 on
// March 3rd" after "my son Leo"). A pronoun's referent is never guessed
// from another sentence: "his name is Kyle" names a subject only when the
// same sentence says whose ("I have a son, his name is Kyle").

// relSubject is the subject a relation or an animal word names: "son",
// "little_brother", "pet/beagle".
func relSubject(rel string) string {
	rel = strings.ToLower(strings.Join(strings.Fields(rel), " "))
	if rel == "" {
		return ""
	}
	if animals[rel] || animals[strings.ReplaceAll(rel, "-", " ")] {
		return "pet/" + slug(rel)
	}
	return slug(rel)
}

// person is the subject of a person rule's match: the relation it names
// (with its name, when given, telling two of a kind apart), or the one a
// known name stands for; "" when neither.
func (x *extractor) person(st *stmt, s string, re *regexp.Regexp, loc []int) string {
	if rel := group(s, re, loc, "rel"); rel != "" {
		subj := relSubject(rel)
		if name := group(s, re, loc, "rname"); name != "" && !notNameWords[strings.ToLower(name)] && !isDateWord(name) {
			subj = x.named(subj, name, st)
		}
		return subj
	}
	if name := group(s, re, loc, "name"); name != "" {
		return x.people[strings.ToLower(name)]
	}
	return ""
}

// named is the subject of the relative or pet of kind subj named name:
// subj itself when it has no other name yet (or this one), else
// subj/<name> ("son" is Leo; a second son, Max, is "son/max"), unless the
// statement corrects the name.
func (x *extractor) named(subj, name string, st *stmt) string {
	if known, ok := x.people[strings.ToLower(name)]; ok {
		return known
	}
	cur := x.nameOf(subj)
	if cur == "" || strings.EqualFold(cur, name) || (st != nil && (correctionMark.MatchString(st.said) || nameFixRE.MatchString(st.said) ||
		containsPhrase(st.said, "not "+cur))) {
		return subj
	}
	return subj + "/" + slug(name)
}

// nameFixRE: words that say a name given before was wrong ("my
// girlfriend is actually called Nadia", "autocorrect!").
var nameFixRE = regexp.MustCompile(`(?i)\b(?:actually|I meant|I misspoke|got (?:it|that|something|her name|his name) wrong|typo|autocorrect|mistake|correction)\b`)

// nameOf is the name subject holds (this conversation's, else memory's).
func (x *extractor) nameOf(subj string) string {
	for i := len(x.out) - 1; i >= 0; i-- {
		if f := x.out[i]; f.Subject == subj && f.Attribute == "name" && !f.Retract {
			return f.Value
		}
	}
	for _, k := range x.known {
		if k.Subject == subj && k.Attribute == "name" {
			return k.Value
		}
	}
	return ""
}

// monthDayAlt reads a day of the year: "March 3rd", "3 March", "the 3rd of
// March".
const monthDayAlt = `(?:(?P<m>` + monthAlt + `)\.? (?P<d>\d{1,2})(?:st|nd|rd|th)?\b|(?:the )?(?P<d2>\d{1,2})(?:st|nd|rd|th)? (?:of )?(?P<m2>` + monthAlt + `)\b)`

var (
	birthdayRE      = regexp.MustCompile(`(?:\b(?i:my|our) (?P<rel>` + relWord + `)(?:'s|s') birthday (?i:is|falls) (?i:on )?|\b(?P<me>(?i:my)) birthday (?i:is|falls) (?i:on )?|\b(?P<name>[A-Z][a-z]+)(?:'s birthday (?i:is|falls) (?i:on )?| (?i:turns|will turn|'ll turn|is turning) (?i:\d{1,3}|` + numberWords + `) (?i:on )|, who turns (?i:\d{1,3}|` + numberWords + `) (?i:on ))|\b(?i:my|our) (?P<rel2>` + relWord + `)(?: [A-Z][a-z]+)? (?i:turns|will turn|'ll turn|is turning) (?i:\d{1,3}|` + numberWords + `) (?i:on ))(?:` + monthDayAlt + `|(?P<dd>the \d{1,2}(?:st|nd|rd|th))\b)`)
	birthdayTodayRE = regexp.MustCompile(`(?i)\b(?:it's|it is|today is|today's) (?:my|our (?P<rel>` + relWord + `)'s) birthday\b|\bmy birthday is today\b`)
)

// birthdays reads "my son's birthday is March 3rd", "Leo turns 6 on
// March 3rd", "my birthday is on the 3rd of March" and "it's my birthday
// today" (the day it was said).
func (x *extractor) birthdays(st *stmt) {
	s := st.text
	if lower := strings.ToLower(s); !strings.Contains(lower, "birthday") && !strings.Contains(lower, "turn") {
		return
	}
	for _, loc := range birthdayRE.FindAllStringSubmatchIndex(s, -1) {
		if !anchored(s, loc[0]) || hedged(s, loc[0], false) {
			continue
		}
		g := func(name string) string { return group(s, birthdayRE, loc, name) }
		var subj string
		switch {
		case g("me") != "":
			subj = "user"
		case g("rel") != "":
			subj = relSubject(g("rel"))
		case g("rel2") != "":
			subj = relSubject(g("rel2"))
		case g("name") != "":
			subj = x.people[strings.ToLower(g("name"))]
		}
		m, d := g("m"), g("d")
		if m == "" {
			m, d = g("m2"), g("d2")
		}
		v := g("dd") // "on the 14th": the day as said, its month unsaid
		if monthOf(m) != 0 {
			v = monthOf(m).String() + " " + strings.TrimLeft(d, "0")
		}
		if subj == "" || outsider(subj) || v == "" {
			continue
		}
		x.add(st, Fact{Subject: subj, Attribute: "birthday", Value: v, Type: Semantic, Confidence: 0.85, Rule: "birthday"})
	}
	if loc := birthdayTodayRE.FindStringSubmatchIndex(s); loc != nil && st.m.Said != 0 && anchored(s, loc[0]) && !hedged(s, loc[0], false) {
		subj := "user"
		if rel := group(s, birthdayTodayRE, loc, "rel"); rel != "" {
			subj = relSubject(rel)
		}
		t := dayOf(st.m.Said)
		x.add(st, Fact{Subject: subj, Attribute: "birthday", Value: t.Month().String() + " " + itoa(t.Day()),
			Type: Semantic, Confidence: 0.8, Rule: "birthday-today"})
	}
}

// Activities and who teaches them, named in one sentence ("Small update
// on my pottery class: Mara moved away, so now Jonas teaches us").
var (
	activityRE  = regexp.MustCompile(`(?i)\bmy ([a-z][a-z' -]{1,30}? (?:class|classes|course|lessons|club|team|workshop|group|choir|band|league|gym|studio|crew|troupe))\b`)
	teachesRE   = regexp.MustCompile(`\b(?P<v>[A-Z][a-z]+) (?:teaches|coaches|runs|leads|takes) (?:us|the class|the course|the group|the sessions)\b`)
	teacherIsRE = regexp.MustCompile(`(?i:\bthe ` + alt(roles) + ` (?:is|was) (?:an? |the )?(?:[A-Za-z'-]+ ){0,5}?(?:called|named) |\bthe ` + alt(roles) + ` is )(?P<v>)[A-Z]`)
)

// teacher reads who teaches an activity the sentence names.
func (x *extractor) teacher(st *stmt) {
	s := st.text
	a := activityRE.FindStringSubmatch(s)
	if a == nil {
		return
	}
	subj := "activity/" + slug(a[1])
	for _, re := range []*regexp.Regexp{teachesRE, teacherIsRE} {
		loc := re.FindStringSubmatchIndex(s)
		if loc == nil || !anchored(s, loc[0]) || hedged(s, loc[0], false) {
			continue
		}
		v, _ := capitalized(s[loc[2*re.SubexpIndex("v")]:], kName)
		if v == "" {
			continue
		}
		x.add(st, Fact{Subject: subj, Attribute: "teacher", Value: v, Type: Semantic, Confidence: 0.75, Rule: "teacher"})
		return
	}
}

// outsiders are people a user names as "my X" who are not family: a
// friend's new job or a colleague's move is their news, not a fact of the
// user's life, and it is not kept (a relative's or a pet's is).
var outsiders = set(`friend best_friend bestie roommate flatmate neighbor neighbour boss manager colleague coworker
doctor dentist therapist teacher coach landlord mentor ex ex_wife ex_husband`)

// outsider reports whether subject (as relSubject gives it) is someone
// not of the user's family.
func outsider(subject string) bool {
	base, _, _ := strings.Cut(subject, "/")
	return outsiders[base]
}
