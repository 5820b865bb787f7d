package consolidate

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
)

// Corrections: a new value replaces an earlier one only when the user
// says so — "actually, make it Monday", "it's Monday, not Friday", "the
// title is QA engineer, not grant writer", "scratch that, …", "I meant
// Porto", "I quit Acme; these days I'm at Globex", "I prefer coffee now".
// A later sentence that merely starts with "It's …" corrects nothing.

// correctionMark: a sentence starting with one of these says it corrects
// what was said before.
var correctionMark = regexp.MustCompile(`(?i)^(?:(?:oh|ok|okay|so|hmm|and|but|well|um)[,!.:]? )*(?:actually|no|nope|sorry|wait|oops|correction|scratch that|on second thought|my bad|I misspoke|I meant|I mean|let me correct|turns out|it turns out)\b`)

// ellipticalRE: the words of an elliptical correction before its new value.
var ellipticalRE = regexp.MustCompile(`(?i)^(?:(?:actually|no|nope|sorry|wait|oh|hmm|ok|okay|so|correction|scratch that|on second thought|my bad|oops)[,!.:—-]* )*(?P<verb>make (?:it|that) |change (?:it|that) to |switch (?:it|that )?to |update (?:it|that) to |replace (?:it|that) with |move (?:it|that) to |push (?:it|that) (?:back )?to |I meant |I mean |it(?:'s| is) (?:actually |now )?|(?:it|that) should be |let's (?:do |make it )|use )(?P<v>)`)

// rescheduledRE: a date said to have changed ("the interview got moved
// to Thursday", "it's been pushed back to June").
var rescheduledRE = regexp.MustCompile(`(?i)\b(?:got|was|has been|have been|'s been|is being|been|is) (?:moved|pushed(?: back)?|changed|rescheduled|postponed|bumped|brought forward) (?:to|till|until) (?:the )?(?P<v>)`)

// explicitChangeRE: words that ask for a change by themselves ("make it
// Monday"); the others ("it's Monday", "use Stripe") correct only after a
// correction mark.
var explicitChangeRE = regexp.MustCompile(`(?i)^(?:make|change|switch|update|replace|move|push)\b`)

// elliptical reads "actually, make it Monday": a new value for a recent
// fact (of the last few messages, newest first) that has a part of the
// new value's shape (a date for a date, an amount for an amount), or, for
// a fact of one value, a whole value of its shape. "It's …" corrects only
// after a correction mark ("wait, it's Monday").
func (x *extractor) elliptical(st *stmt, n int) {
	s := st.said
	if len(x.out) == 0 || len(x.out) > n {
		return
	}
	var nv string
	named := false // the sentence must name what moved
	if loc := ellipticalRE.FindStringSubmatchIndex(s); loc != nil {
		verb := strings.ToLower(s[loc[2]:loc[3]])
		if !explicitChangeRE.MatchString(verb) && !correctionMark.MatchString(s) {
			return
		}
		nv = verbPhrase(s[loc[4]:])
	} else if loc := rescheduledRE.FindStringSubmatchIndex(s); loc != nil {
		nv, named = verbPhrase(s[loc[2]:]), true // "the interview got moved to Thursday"
		if !isDatePhrase(strings.TrimRight(nv, ".!")) {
			return
		}
	} else {
		return
	}
	for _, suffix := range []string{" instead", " then", " please"} {
		nv = strings.TrimSuffix(nv, suffix)
	}
	nv = strings.TrimSpace(nv)
	if nv == "" || len(strings.Fields(nv)) > 6 {
		return
	}
	if i := strings.Index(strings.ToLower(nv), " not "); i > 0 {
		nv = strings.TrimRight(nv[:i], ", ")
	}
	for i := len(x.out) - 1; i >= 0; i-- {
		old := x.out[i]
		if old.Seq+8 < st.m.Seq {
			return
		}
		if old.Type != Semantic || old.Retract || (named && !namesThing(s, old.Value)) {
			continue
		}
		v, when, ok := substitute(old, nv)
		if !ok {
			continue
		}
		f := old
		f.Value, f.When, f.Correction, f.Replaces = v, when, true, old.Value
		f.Statement, f.Context, f.MessageIDs, f.Seq, f.Rule, f.Confidence, f.Said = "", "", nil, 0, "correction", 0.8, 0
		f.Date = x.redate(f, st)
		x.add(st, f)
		return
	}
}

// redate resolves f.When again (a corrected date).
func (x *extractor) redate(f Fact, st *stmt) string {
	if f.When == "" {
		return ""
	}
	future := isFuture(f.When) || isFuture(st.text) || f.Subject == "we"
	for _, p := range []string{"trip/", "plan/", "decision/", "deadline"} {
		future = future || strings.HasPrefix(f.Attribute, p)
	}
	d, _ := findDate(f.When, st.m.Said, future)
	return d.date
}

// substitute puts the new value nv in the place of the part of old of
// its shape: "ship on Friday" + "Monday" = "ship on Monday"; a date part
// of old.When is replaced there. Without such a part, nv replaces old's
// value whole when both have one shape, nv is no date or number, and old
// is not a value of many.
func substitute(old Fact, nv string) (value, when string, ok bool) {
	value, when = old.Value, old.When
	if old.When != "" && isDatePhrase(nv) {
		when, ok = nv, true // the date said anew, whole
	}
	if v, ok2 := substituteDate(old.Value, nv); ok2 {
		value, ok = v, true
	}
	if ok {
		return value, when, true
	}
	many := manyValued(old.Attribute)
	if !many && !isDatePhrase(nv) && shapeOf(old.Value) == shapeOf(nv) && len(strings.Fields(old.Value)) <= 4 {
		return nv, old.When, true
	}
	return "", "", false
}

// substituteDate replaces the date words of s with nv's (a date, an
// amount or a number for one of its kind).
func substituteDate(s, nv string) (string, bool) {
	ow := strings.Fields(s)
	nw := strings.Fields(nv)
	if len(nw) == 1 {
		n := strings.Trim(nw[0], ".,!")
		for i := len(ow) - 1; i >= 0; i-- {
			o := strings.Trim(ow[i], ".,!")
			switch {
			case isDateWord(o) && isDateWord(n), isNumber(o) && isNumber(n), isMoney(o) && isMoney(n):
				ow[i] = n
				return strings.Join(ow, " "), true
			}
		}
	}
	if !isDatePhrase(nv) {
		return "", false
	}
	end := -1 // "March 10" in the place of "March 3" or "Friday"
	for i := len(ow) - 1; i >= 0; i-- {
		w := strings.Trim(ow[i], ".,!")
		if isDatePart(w) && (isDateWord(w) || end >= 0 || isNumber(w) || isOrdinal(w)) {
			if end < 0 {
				end = i
			}
			continue
		}
		if end >= 0 {
			return strings.Join(append(append(slices.Clone(ow[:i+1]), nw...), ow[end+1:]...), " "), true
		}
	}
	if end >= 0 {
		return strings.Join(append(slices.Clone(nw), ow[end+1:]...), " "), true
	}
	return "", false
}

// isDatePhrase: every word is a date's ("March 10", "Monday").
func isDatePhrase(v string) bool {
	w := strings.Fields(v)
	for _, x := range w {
		if !isDatePart(strings.Trim(x, ".,!")) {
			return false
		}
	}
	return len(w) > 0
}

// manyValued: an attribute with a value per key (allergy/peanuts), which a
// whole new value does not replace.
func manyValued(attr string) bool {
	kind, _, ok := strings.Cut(attr, "/")
	return ok && kind != "decision" && kind != "plan"
}

// isDatePart: a word of a date (Friday, March, 10, 3rd, 2026-03-10).
func isDatePart(w string) bool {
	lw := strings.ToLower(w)
	return isDateWord(w) || isNumber(w) || lw == "may" || lw == "march" || isOrdinal(lw) || facts.IsISODate(w)
}

func isOrdinal(w string) bool {
	lw := strings.ToLower(w)
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		if strings.HasSuffix(lw, suf) && isNumber(strings.TrimSuffix(lw, suf)) {
			return true
		}
	}
	return false
}

var moneyRE = regexp.MustCompile(`^(?:[$€£]\s?\d[\d,]*(?:\.\d+)?k?|\d[\d,]*(?:\.\d+)?k?\s?(?:dollars|euros|bucks|pounds))$`)

func isMoney(w string) bool { return moneyRE.MatchString(w) }

// shape classes of a value for corrections.
const (
	sPhrase = iota
	sName
	sMoney
	sNumber // an age, a count: replaced by a number only
)

func shapeOf(v string) int {
	switch {
	case isMoney(v):
		return sMoney
	case isNumber(v):
		return sNumber
	case shapeName(v):
		return sName
	}
	return sPhrase
}

// notRE: "…, not <old>", "not <old> but …", "instead of <old>", "rather
// than <old>".
var notRE = regexp.MustCompile(`(?i)(?:,? not (?:on |in |at |for |the |a |an )?|\binstead of (?:the |a |an )?|\brather than (?:the |a |an )?)([^,.;!?]{1,40})`)

// notCorrection reads "it's QA engineer, not grant writer", "the flight
// is June 14, not June 12": the value named after "not" is an earlier (or
// known) one, replaced by the value of its shape before it.
func (x *extractor) notCorrection(st *stmt, n int) {
	s := st.said
	loc := notRE.FindStringSubmatchIndex(s)
	if loc == nil {
		return
	}
	oldPart := strings.TrimSpace(s[loc[2]:loc[3]])
	for _, old := range x.earlier(n) {
		if old.Type != Semantic {
			continue
		}
		inValue := strings.EqualFold(old.Value, oldPart) || containsPhrase(old.Value, oldPart)
		inWhen := old.When != "" && containsPhrase(old.When, oldPart)
		if !inValue && !inWhen {
			continue
		}
		// A fact read from this sentence with old's value's shape is its
		// new value ("I meant I moved to Porto, not Lisbon").
		for i := n; i < len(x.out); i++ {
			f := &x.out[i]
			if f.Key() == old.Key() {
				f.Correction, f.Replaces = true, old.Value
				return
			}
			if sameKind(*f, old) && manyValued(old.Attribute) && strings.EqualFold(old.Value, oldPart) {
				// "I'm allergic to cashews, not peanuts": the old item ends.
				f.Correction, f.Replaces = true, old.Value
				x.add(st, Fact{Subject: old.Subject, Attribute: old.Attribute, Value: old.Value, Type: old.Type,
					Confidence: 0.75, Retract: true, Rule: "correction"})
				return
			}
		}
		if len(x.out) > n {
			return // the sentence states facts of its own
		}
		before := strings.TrimRight(s[:loc[0]], " ,")
		nv := lastValueLike(before, oldPart)
		if nv == "" {
			nv = valueAfter(s[loc[1]:], oldPart) // "it's not peanuts, it's cashews"
		}
		if nv == "" || strings.EqualFold(nv, oldPart) {
			return
		}
		if manyValued(old.Attribute) && strings.EqualFold(old.Value, oldPart) {
			x.replaceItem(st, old, nv)
			return
		}
		f := old
		switch {
		case inWhen:
			f.When = replacePhrase(old.When, oldPart, nv)
		case strings.EqualFold(old.Value, oldPart):
			f.Value = nv
		default:
			f.Value = replacePhrase(old.Value, oldPart, nv)
		}
		f.Correction, f.Replaces = true, old.Value
		f.Statement, f.Context, f.MessageIDs, f.Seq, f.Rule, f.Confidence, f.Said = "", "", nil, 0, "correction", 0.75, 0
		f.Date = x.redate(f, st)
		x.add(st, f)
		return
	}
}

// lastValueLike is the phrase at the end of before with as many words as
// old, of its shape ("… is June 14" for "June 12"), or the words after
// the last copula ("the title is QA engineer").
func lastValueLike(before, old string) string {
	bw := strings.Fields(before)
	ow := strings.Fields(old)
	if isDatePhrase(old) && len(bw) >= len(ow) {
		nw := bw[len(bw)-len(ow):]
		if isDatePhrase(strings.Join(nw, " ")) {
			return strings.Join(nw, " ")
		}
	}
	if locs := copulaRE.FindAllStringIndex(before, -1); locs != nil {
		rest := before[locs[len(locs)-1][1]:]
		if shapeName(old) {
			v, _ := capitalized(rest, kPlace)
			return v
		}
		v, _ := np(rest)
		return v
	}
	return ""
}

var copulaRE = regexp.MustCompile(`(?i)\b(?:is|was|be|it's|are|to|now|in|at)\s+`)

func containsPhrase(s, p string) bool {
	return len(p) >= 3 && regexp.MustCompile(`(?i)(?:^|\b)`+regexp.QuoteMeta(p)+`(?:\b|$)`).MatchString(s)
}

func replacePhrase(s, p, with string) string {
	re := regexp.MustCompile(`(?i)(?:^|\b)` + regexp.QuoteMeta(p) + `(?:\b|$)`)
	return re.ReplaceAllLiteralString(s, with)
}

// offRE: a value named as off ("the Lisbon plan fell through").
var offRE = regexp.MustCompile(`(?i)\b(?:fell through|is off|was called off|got called off|was cancell?ed|got cancell?ed|is cancell?ed|didn't work out|did not work out|didn't happen|isn't happening|is not happening)\b`)

// nowValueRE: the value that replaces it ("it's Porto now", "so now Jonas
// teaches us").
var nowValueRE = regexp.MustCompile(`\b(?:[Ii]t(?:'s| is) (?P<a>[A-Z][\w-]*(?: [A-Z][\w-]*)*) now\b|[Nn]ow it(?:'s| is) (?P<b>[A-Z][\w-]*(?: [A-Z][\w-]*)*)|[Ii]t(?:'s| is) now (?P<c>[A-Z][\w-]*(?: [A-Z][\w-]*)*)|(?:[Ww]e(?:'re| are)|I(?:'m| am)) (?:doing|going to|heading to|going with) (?P<d>[A-Z][\w-]*(?: [A-Z][\w-]*)*) instead\b)`)

// employerNowRE: where the user works now, said in the message that
// says they left their employer ("I'm not at X anymore, as of Monday I'm
// at Y").
var employerNowRE = regexp.MustCompile(`\b(?:I(?:'m| am) (?:now )?(?:at|with|working at|working for)|I (?:started|start) (?:at|with)|I(?:'ve| have)? (?:got|landed|started|took) (?:a |my |the )?(?:new )?(?:job|position|role) (?:at|with)) (?:the )?([A-Z][\w-]*(?: [A-Z][\w-]*)*)`)

// fellThrough reads "the Lisbon plan fell through, it's Porto now": the
// earlier value named just before the mark of its end is replaced by the
// name the sentence gives "now".
func (x *extractor) fellThrough(st *stmt, n int) {
	s := st.said
	off := offRE.FindStringIndex(s)
	m := nowValueRE.FindStringSubmatch(s)
	if off == nil || m == nil || len(x.out) > n {
		return
	}
	nv := m[1] + m[2] + m[3] + m[4]
	var best *Fact
	bestDist := 40 // at most a few words before the mark
	for _, old := range x.earlier(n) {
		if old.Type != Semantic || !shapeName(old.Value) || strings.EqualFold(old.Value, nv) {
			continue
		}
		i := strings.LastIndex(s[:off[0]], old.Value)
		if i < 0 {
			continue
		}
		if d := off[0] - (i + len(old.Value)); d < bestDist {
			o := old
			best, bestDist = &o, d
		}
	}
	if best == nil {
		return
	}
	f := *best
	if kind, _, many := strings.Cut(f.Attribute, "/"); many && kind == "trip" {
		f.Attribute = kind + "/" + slug(nv) // the new trip's own key
	}
	f.Value, f.When, f.Date, f.Correction, f.Replaces = nv, "", "", true, best.Value
	f.Statement, f.Context, f.MessageIDs, f.Seq, f.Rule, f.Confidence, f.Said = "", "", nil, 0, "correction", 0.75, 0
	x.add(st, f)
}

// correct reads the corrections of st: elliptical ones and those naming
// the value replaced.
func (x *extractor) correct(st *stmt, n int) {
	if len(x.out) == n {
		x.elliptical(st, n)
	}
	if len(x.out) == n {
		x.fellThrough(st, n)
	}
	if len(x.out) == n || notRE.MatchString(st.said) {
		x.notCorrection(st, n)
	}
}

// nowRE: the statement says a value changed.
var nowRE = regexp.MustCompile(`(?i)\b(?:now|instead|anymore|these days|no longer|nowadays|switched|changed)\b`)

// alsoRE: a statement that adds to what was said ("I also like blues").
var alsoRE = regexp.MustCompile(`(?i)\b(?:also|too|as well|another|both)\b`)

// replaceOfMany: a new preference (prefers/coffee) replaces the newest
// earlier one of its subject when the sentence marks a change ("actually,
// I prefer coffee now"), unless it adds to it ("I also prefer …").
func (x *extractor) replaceOfMany(st *stmt, n int) {
	s := st.said
	if !(correctionMark.MatchString(s) || nowRE.MatchString(s) || planChangeRE.MatchString(s)) || alsoRE.MatchString(s) {
		return
	}
	for i := n; i < len(x.out); i++ {
		f := &x.out[i]
		kind, _, _ := strings.Cut(f.Attribute, "/")
		if kind == "trip" && !f.Correction && !f.Retract && (correctionMark.MatchString(s) || planChangeRE.MatchString(s)) {
			x.replaceTrip(st, f, n)
			continue
		}
		if kind != "prefers" || f.Correction {
			continue
		}
		for _, old := range x.earlier(n) {
			ok, _, _ := strings.Cut(old.Attribute, "/")
			if old.Subject == f.Subject && ok == kind && old.Type == f.Type && !strings.EqualFold(old.Value, f.Value) {
				f.Correction, f.Replaces = true, old.Value
				break
			}
		}
	}
}

// planChangeRE: a plan said to change ("change of plans", "instead",
// "the Lisbon trip fell through").
var planChangeRE = regexp.MustCompile(`(?i)\b(?:instead|change of plans?|changed (?:our|my|the) plans?|plans? changed|scratch that|fell through|(?:got|was|is) cancell?ed|called off|not going to [A-Z][\w-]*(?: [A-Z][\w-]*)? (?:anymore|after all))\b`)

// replaceTrip makes trip f, said as a change of plans, replace the trip
// it changes: the one the sentence names, else the newest one before it.
func (x *extractor) replaceTrip(st *stmt, f *Fact, n int) {
	var newest *Fact
	for _, old := range x.earlier(n) {
		if old.Subject != f.Subject || !strings.HasPrefix(old.Attribute, "trip/") || old.Type != f.Type || strings.EqualFold(old.Value, f.Value) {
			continue
		}
		o := old
		if containsPhrase(st.said, old.Value) {
			newest = &o
			break
		}
		if newest == nil {
			newest = &o
		}
	}
	if newest == nil {
		return
	}
	f.Correction, f.Replaces = true, newest.Value
}

// Retractions: "I'm not allergic to peanuts anymore", "I no longer live
// in Berlin", "I quit Acme", "I lost my job as a banker". A retraction
// needs a word of change (anymore, no longer, quit, left, lost): a plain
// negation ("I'm not allergic to anything") retracts nothing; a value of
// one (home_city, employer) is retracted only when it is the one held.
type retraction struct {
	re   *regexp.Regexp
	k    kind
	attr string
}

var retractions = []retraction{
	{regexp.MustCompile(`(?i:` + iAm + ` (?:no longer|not) allergic to )(?P<v>)`), kNP, "allergy/%"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|do not) (?:really )?(?:like|love|enjoy) )(?P<v>)`), kNP, "likes/%"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|do not) (?:really )?prefer )(?P<v>)`), kNP, "prefers/%"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|do not) (?:hate|dislike|mind) )(?P<v>)`), kNP, "dislikes/%"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|do not) live in |` + iAm + ` no longer (?:living|based) in |\b(?:I|we) used to live in )(?P<v>)`), kPlace, "home_city"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|do not|used to) work (?:at|for) |` + iHave + ` (?:just )?(?:quit|left) (?:my (?:job|position|role) (?:at|with) )?|` + iAm + ` (?:no longer|not) (?:at|with|working at|working for) (?:the )?|\bI (?:lost|quit|left) my (?:job|position|role) (?:at|with) |\bI (?:got|was) (?:laid off|fired|let go) (?:from|by) )(?P<v>)`), kName, "employer"},
	{regexp.MustCompile(`(?i:` + iAm + ` (?:not|no longer) (?:a |an )?)(?P<v>)(?i:vegetarian|vegan|pescatarian|diabetic|teetotal)\b`), kNP, "diet"},
	{regexp.MustCompile(`(?i:(?:` + iAm + `|` + weAre + `) (?:not|no longer) (?:going|heading|flying|traveling|travelling|driving) to )(?P<v>)`), kPlace, "trip/%"},
	{regexp.MustCompile(`(?i:\bI (?:am not|no longer|don't|do not) (?:do|doing|play|playing|practice|practicing|practise|practising) (?:the )?|\bI (?:have )?(?:gave up|given up|quit|stopped) (?:doing |playing )?(?:the )?)(?P<v>)`), kNP, "hobby/%"},
	{regexp.MustCompile(`(?i:` + iAm + ` (?:not|no longer) (?:a|an) |\bI (?:lost|quit|left) my (?:job|position|role) as (?:a |an |the )?)(?P<v>)`), kNP, "job_title"},
}

// changeWordRE: the statement says the fact changed.
var changeWordRE = regexp.MustCompile(`(?i)\b(?:anymore|any more|no longer|quit|left|lost|laid off|fired|let go|used to|gave up|given up|stopped)\b`)

// retract reads the retractions of st.
func (x *extractor) retract(st *stmt, n int) {
	s := st.text
	if !changeWordRE.MatchString(s) {
		return
	}
	for _, rt := range retractions {
		for _, loc := range rt.re.FindAllStringSubmatchIndex(s, -1) {
			if !anchored(s, loc[0]) || hedged(s, loc[0], true) {
				continue
			}
			rest := s[loc[2*rt.re.SubexpIndex("v")]:]
			var v string
			if rt.attr == "diet" {
				v = strings.ToLower(strings.Trim(strings.Fields(rest)[0], ".,!;"))
			} else {
				v, _ = value(rest, rt.k)
			}
			if v == "" {
				continue
			}
			attr := strings.ReplaceAll(rt.attr, "%", slug(v))
			if !strings.Contains(rt.attr, "%") && !x.holds("user", attr, v) {
				continue // "I don't live in Rome anymore" retracts Rome only
			}
			if strings.Contains(rt.attr, "%") && !strings.Contains(strings.ToLower(s[loc[0]:]), "anymore") &&
				!strings.Contains(strings.ToLower(s[loc[0]:]), "no longer") && !strings.Contains(strings.ToLower(s[loc[0]:]), "any more") &&
				!(rt.attr == "hobby/%" && x.holds("user", attr, v)) {
				continue // "I quit pottery" retracts a hobby memory holds
			}
			x.add(st, Fact{Subject: "user", Attribute: attr, Value: v, Type: Semantic, Confidence: 0.8, Retract: true, Rule: "retract"})
		}
	}
	_ = n
}

// nowAfterRetract reads the value that replaces one the sentence
// retracts: "We're not going to Lisbon anymore, it's Porto now".
func (x *extractor) nowAfterRetract(st *stmt, n int) {
	if !slices.ContainsFunc(x.out[n:], func(f Fact) bool { return f.Retract }) {
		return // nothing taken back by this statement: no value to replace it
	}
	var nv, employer string
	if m := nowValueRE.FindStringSubmatch(st.said); m != nil {
		nv = m[1] + m[2] + m[3] + m[4]
	}
	if m := employerNowRE.FindStringSubmatch(st.m.Text); m != nil {
		employer = m[1]
	}
	if nv == "" && employer == "" {
		return
	}
	for i := n; i < len(x.out); i++ {
		old := x.out[i]
		nv := nv
		if old.Attribute == "employer" && employer != "" {
			nv = employer // "I'm not at X anymore, I'm at Y now"
		}
		if !old.Retract || nv == "" || strings.EqualFold(old.Value, nv) {
			continue
		}
		kind, _, many := strings.Cut(old.Attribute, "/")
		if kind != "trip" && old.Attribute != "home_city" && old.Attribute != "employer" {
			continue
		}
		f := old
		if many {
			f.Attribute = kind + "/" + slug(nv)
		}
		f.Value, f.Retract, f.Correction, f.Replaces, f.Rule, f.Confidence = nv, false, true, old.Value, "correction", 0.75
		f.Date, f.When, f.Statement, f.Context, f.MessageIDs, f.Seq, f.Said = "", "", "", "", nil, 0, 0
		x.add(st, f)
		return
	}
}

// lets reads a decision made with "let's" that names a date, a number or
// a name ("let's schedule the migration for next Tuesday").
func (x *extractor) lets(st *stmt) {
	s := st.text
	loc := letsRE.FindStringSubmatchIndex(s)
	if loc == nil || !anchored(s, loc[0]) || hedged(s, loc[0], false) {
		return
	}
	v := verbPhrase(s[loc[2]:])
	if v == "" || notDecisionRE.MatchString(v) || !facts.HasKeyFact(" "+v) || topic(v) == "" {
		return
	}
	clause := s[clauseStart(s, loc[0]):]
	d, _ := findDate(clause, st.m.Said, true)
	x.add(st, Fact{Subject: "we", Attribute: "decision/" + topic(v), Value: v, Type: Semantic, Confidence: 0.65, Rule: "lets",
		Date: d.date, When: d.words})
}

// letsRE: "let's ship on Friday".
var letsRE = regexp.MustCompile(`(?i)\blet(?:'s| us) (?:go with |do )?(?P<v>)`)

// notDecisionRE: "let's say", "let's see", … decide nothing.
var notDecisionRE = regexp.MustCompile(`(?i)^(?:say|see|talk|think|chat|hope|try|start|begin|move on|get started|continue|recap|review|check|look|figure|keep|catch up|do this|do it|go|make it happen|make this happen|hang out|meet up|get together|celebrate|enjoy|chase|crush|rock|make|get|have|grab|stay|plan|keep|spread|show|share|support|inspire|dance|boogie|hope|pray|cheer|raise|toast|not|all|just|definitely|totally|continue)\b`)

// afterNotRE: the new value said after the old one ("not peanuts, it's
// cashews", "not Lisbon but Porto").
var afterNotRE = regexp.MustCompile(`(?i)^[ ,]*(?:but |it's |it is |it was |actually |just )*`)

// valueAfter is the value of old's shape said right after the words that
// name old as not so.
func valueAfter(rest, old string) string {
	rest = rest[len(afterNotRE.FindString(rest)):]
	if shapeName(old) {
		v, _ := capitalized(rest, kPlace)
		return v
	}
	v, _ := np(rest)
	return v
}

// replaceItem replaces old, a value of many (allergy/peanuts), by nv: the
// old item is retracted and the new one filed under its own key
// (allergy/cashews), so the old value is current nowhere.
func (x *extractor) replaceItem(st *stmt, old Fact, nv string) {
	kind, _, _ := strings.Cut(old.Attribute, "/")
	r := Fact{Subject: old.Subject, Attribute: old.Attribute, Value: old.Value, Type: old.Type, Confidence: 0.75, Retract: true, Rule: "correction"}
	x.add(st, r)
	f := Fact{Subject: old.Subject, Attribute: kind + "/" + slug(nv), Value: nv, Type: old.Type, Label: old.Label,
		Confidence: 0.75, Correction: true, Replaces: old.Value, Rule: "correction"}
	x.add(st, f)
}

// sameKind reports whether a and b are values of one kind of many of one
// subject (allergy/cashews and allergy/peanuts).
func sameKind(a, b Fact) bool {
	ka, _, _ := strings.Cut(a.Attribute, "/")
	kb, _, _ := strings.Cut(b.Attribute, "/")
	return a.Subject == b.Subject && a.Type == b.Type && ka == kb
}

// namesThing reports whether s names the thing value is of: its last
// word ("the interview" for "job interview").
func namesThing(s, value string) bool {
	w := strings.Fields(value)
	return len(w) > 0 && containsPhrase(s, strings.Trim(w[len(w)-1], ".,!"))
}
