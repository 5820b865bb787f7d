package consolidate

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
)

// Corrections: a statement that replaces an earlier value, stated in full
// ("it's Porto now, not Lisbon"), elliptically ("actually, make it
// Monday") or as a changed preference ("I prefer coffee now").

// changeRE marks a statement that may replace an earlier value.
var changeRE = regexp.MustCompile(`(?i)\b(?:actually|now|instead|changed|change|update|updated|moved away|no longer|not|anymore|any more|correction|corrected|switched|switching|fell through|turns out|turned out|renamed|meant|replaced|rather)\b`)

// alsoRE: a statement that adds to what was said ("I also like blues").
var alsoRE = regexp.MustCompile(`(?i)\b(?:also|too|as well|another|both)\b`)

// elliptical reads "actually, make it Monday": a new value for a recent
// fact (of the last few messages, newest first) that has a part of the
// new value's shape (a date for a date, an amount for an amount), or, for
// a fact of one value, a whole value of its shape.
func (x *extractor) elliptical(m Message, s string) {
	loc := correctionRE.FindStringSubmatchIndex(s)
	if loc == nil || len(x.out) == 0 {
		return
	}
	nv := phraseWithDate(s[loc[2]:])
	nv = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(nv, " instead"), " then"))
	if nv == "" || len(strings.Fields(nv)) > 6 || pronounValues[strings.ToLower(nv)] {
		return
	}
	for i := len(x.out) - 1; i >= 0; i-- {
		old := x.out[i]
		if old.Seq+8 < m.Seq {
			return
		}
		if old.Type != Semantic {
			continue
		}
		v, ok := substitute(old.Value, nv, manyValued(old.Attribute))
		if !ok {
			continue
		}
		f := old
		f.Value, f.Correction, f.Replaces = v, true, old.Value
		f.Statement, f.MessageIDs, f.Seq, f.Rule, f.Confidence = s, []string{m.ID}, m.Seq, "correction", 0.8
		x.add(f)
		return
	}
}

// manyValued: an attribute with a value per key (allergy/peanuts), which a
// whole new value does not replace.
func manyValued(attr string) bool {
	kind, _, ok := strings.Cut(attr, "/")
	return ok && kind != "decision"
}

// substitute puts the new value nv in the place of the part of old of
// its shape: "ship on Friday" + "Monday" = "ship on Monday". Without such
// a part, nv replaces old whole when both have one shape, nv is no date
// or number, and old is not a value of many. ok is false otherwise.
func substitute(old, nv string, many bool) (string, bool) {
	ow := strings.Fields(old)
	nw := strings.Fields(nv)
	if len(nw) == 1 {
		n := strings.Trim(nw[0], ".,!")
		for i := len(ow) - 1; i >= 0; i-- {
			o := strings.Trim(ow[i], ".,!")
			switch {
			case isDateWord(o) && isDateWord(n), moneyRE.MatchString(o) && moneyRE.MatchString(n),
				isNumber(o) && isNumber(n):
				ow[i] = n
				return strings.Join(ow, " "), true
			}
		}
	}
	dateLike := true
	for _, w := range nw {
		w = strings.Trim(w, ".,!")
		dateLike = dateLike && isDatePart(w)
	}
	if dateLike { // "March 10" in the place of "March 3" or "Friday"
		end := -1
		for i := len(ow) - 1; i >= 0; i-- {
			if isDatePart(strings.Trim(ow[i], ".,!")) && (isDateWord(strings.Trim(ow[i], ".,!")) || end >= 0 || isNumber(strings.Trim(ow[i], ".,!"))) {
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
	}
	if !many && !dateLike && shapeOf(old) == shapeOf(nv) && len(ow) <= 4 {
		return nv, true
	}
	return "", false
}

// isDatePart: a word of a date (Friday, March, 10, 3rd, 2026-03-10).
func isDatePart(w string) bool {
	lw := strings.ToLower(w)
	if isDateWord(w) || isNumber(w) || lw == "may" {
		return true
	}
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		if strings.HasSuffix(lw, suf) && isNumber(strings.TrimSuffix(lw, suf)) {
			return true
		}
	}
	return false
}

func isNumber(w string) bool {
	return w != "" && strings.Trim(w, "0123456789.,:") == ""
}

// replaceOfMany: a fact read from s with an attribute of many values
// (prefers/tea) replaces the newest earlier one of its subject and kind
// when s marks a change ("actually, I prefer coffee now"), unless it adds
// to it ("I also like blues").
func (x *extractor) replaceOfMany(s string, n int) {
	if !(correctionMark.MatchString(s) || nowRE.MatchString(s)) || alsoRE.MatchString(s) {
		return
	}
	for i := n; i < len(x.out); i++ {
		f := &x.out[i]
		kind, _, many := strings.Cut(f.Attribute, "/")
		if !many || f.Correction {
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

// correct turns the facts read from s (from index n of x.out) into
// corrections when s names an earlier value as replaced; when s names one
// but no rule read a new value, the new value is taken from s by shape.
func (x *extractor) correct(m Message, s string, n int) {
	if !changeRE.MatchString(s) {
		return
	}
	for _, old := range x.mentioned(s, n) {
		for i := n; i < len(x.out); i++ {
			f := &x.out[i]
			if f.Value != old.Value && shapeOf(f.Value) == shapeOf(old.Value) && f.Key() != old.Key() && f.Type == old.Type {
				f.Subject, f.Attribute = old.Subject, old.Attribute
			}
			if f.Key() == old.Key() && f.Value != old.Value {
				f.Correction, f.Replaces = true, old.Value
				return
			}
		}
		if nv := newValue(s, old.Value); nv != "" {
			f := old
			f.Value, f.Correction, f.Replaces = nv, true, old.Value
			f.Statement, f.MessageIDs, f.Seq, f.Rule, f.Confidence = s, []string{m.ID}, m.Seq, "correction", 0.75
			x.add(f)
			return
		}
	}
	x.correctPart(m, s, n)
}

// notPartRE: "June 14, not June 12": the new part, then the old one.
var notPartRE = regexp.MustCompile(`(?i),? not (?:on |in |at |for )?([^,.;!?]{1,40})`)

// correctPart reads "the flight is June 14, not June 12": a part of an
// earlier value (June 12 in "Madrid on June 12") named as replaced by as
// many words of its shape before it. Facts read from s itself are left
// alone.
func (x *extractor) correctPart(m Message, s string, n int) {
	loc := notPartRE.FindStringSubmatchIndex(s)
	if loc == nil || len(x.out) > n {
		return
	}
	oldPart := strings.TrimSpace(s[loc[2]:loc[3]])
	ow := strings.Fields(oldPart)
	before := strings.Fields(strings.TrimRight(s[:loc[0]], " ,"))
	if len(ow) == 0 || len(ow) > 4 || len(before) < len(ow) {
		return
	}
	nw := before[len(before)-len(ow):]
	for i := range ow {
		o, w := strings.Trim(ow[i], ".,!"), strings.Trim(nw[i], ".,!")
		if isDatePart(o) != isDatePart(w) || isCap(o) != isCap(w) {
			return // not the same shape: "Monday, not at all"
		}
	}
	newPart := strings.Join(nw, " ")
	if strings.EqualFold(newPart, oldPart) {
		return
	}
	partRE := regexp.MustCompile(`(?i)(?:^|\b)` + regexp.QuoteMeta(oldPart) + `(?:\b|$)`)
	for _, old := range x.earlier(n) {
		loc := partRE.FindStringIndex(old.Value) // in old.Value itself: lower-casing may change byte offsets
		if loc == nil {
			continue
		}
		f := old
		f.Value, f.Correction, f.Replaces = old.Value[:loc[0]]+newPart+old.Value[loc[1]:], true, old.Value
		f.Statement, f.MessageIDs, f.Seq, f.Rule, f.Confidence = s, []string{m.ID}, m.Seq, "correction", 0.75
		x.add(f)
		return
	}
}

// replacedRE marks a value as the one replaced ("the Lisbon plan fell
// through", "isn't Biscuit anymore", "not Friday", "Mara moved away").
var replacedRE = regexp.MustCompile(`(?i)\b(?:fell through|not|no longer|anymore|any more|instead of|rather than|isn't|wasn't|aren't|moved away|left|changed|switched from|scratch|cancell?ed|replaced|dropped|gone)\b`)

// mentioned returns the earlier and known facts whose value s names,
// the one nearest a mark of replacement first ("Update on Gwendolyn: the
// Penang plan fell through" corrects Penang, not the name), then newest
// first.
func (x *extractor) mentioned(s string, n int) []Fact {
	marks := replacedRE.FindAllStringIndex(s, -1)
	type cand struct {
		f    Fact
		dist int
	}
	var cs []cand
	for _, old := range x.earlier(n) {
		if !mentions(s, old.Value) {
			continue
		}
		i := strings.Index(strings.ToLower(s), strings.ToLower(old.Value))
		d := len(s)
		for _, mk := range marks {
			switch {
			case i >= 0 && mk[0] >= i+len(old.Value):
				d = min(d, mk[0]-(i+len(old.Value)))
			case i >= 0 && mk[1] <= i:
				d = min(d, i-mk[1])
			}
		}
		cs = append(cs, cand{old, d})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.dist - b.dist })
	out := make([]Fact, len(cs))
	for i, c := range cs {
		out[i] = c.f
	}
	return out
}

// earlier returns the facts before index n and the known ones, newest
// first, one per key (its newest value).
func (x *extractor) earlier(n int) []Fact {
	seen := map[string]bool{}
	var out []Fact
	for i := n - 1; i >= 0; i-- {
		if k := x.out[i].Key(); !seen[k] {
			seen[k] = true
			if !x.out[i].Retract { // a retracted fact holds no value
				out = append(out, x.out[i])
			}
		}
	}
	for i := len(x.known) - 1; i >= 0; i-- {
		if k := x.known[i].Key(); !seen[k] {
			seen[k] = true
			out = append(out, x.known[i])
		}
	}
	return out
}

// mentions reports whether s holds value v as words (at least three
// letters, so "a" or "it" never match).
func mentions(s, v string) bool {
	if len(v) < 3 {
		return false
	}
	if shapeOf(v) == kPhrase {
		return facts.ContainsWord(strings.ToLower(s), strings.ToLower(v))
	}
	return facts.ContainsWord(s, v)
}

// newValue returns the value in s that replaces old: of old's shape, not
// old itself, nearest after a change marker ("now", "to", "it's", "is")
// or before ", not <old>".
func newValue(s, old string) string {
	sh := shapeOf(old)
	if i := strings.Index(s, ", not "+old); i > 0 {
		before := s[:i]
		switch sh {
		case kMoney:
			if ms := moneyAnyRE.FindAllString(before, -1); len(ms) > 0 {
				return ms[len(ms)-1]
			}
		default:
			if j := copulaRE.FindAllStringIndex(before, -1); j != nil {
				if v := phrase(before[j[len(j)-1][1]:], sh); v != "" && v != old {
					return v
				}
			}
		}
	}
	marks := newValueMarkRE.FindAllStringIndex(s, -1)
	for _, mk := range marks {
		rest := s[mk[1]:]
		var v string
		switch sh {
		case kMoney:
			v = money(rest)
		case kName, kPlace:
			v = capitalized(rest, kName)
		default:
			continue // a phrase is too vague to take by position
		}
		if v != "" && v != old && !strings.Contains(old, v) {
			return v
		}
	}
	return ""
}
