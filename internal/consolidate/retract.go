package consolidate

import (
	"regexp"
	"strings"
)

// Retractions: "I'm not allergic to peanuts anymore", "I no longer live
// in Berlin", "I don't eat meat anymore"… A retraction needs a word of
// change (anymore, no longer): a plain negation ("I'm not allergic to
// anything") retracts nothing.

// retraction is one kind of retracted statement: its pattern (value in
// group "v") and the attribute it retracts ("%": one per value).
type retraction struct {
	re   *regexp.Regexp
	k    kind
	subj string
	attr string
}

var retractions = []retraction{
	{regexp.MustCompile(`(?i:` + iAm + ` no longer allergic to |` + iAm + ` not allergic to )(?P<v>)(?i:[^.!?;]*\b(?:anymore|any more)\b|)`), kPhrase, "user", "allergy/%"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|don’t|do not) (?:really )?(?:like|love|enjoy) )(?P<v>)`), kPhrase, "user", "likes/%"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|don’t|do not) (?:really )?(?:prefer) )(?P<v>)`), kPhrase, "user", "prefers/%"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|don’t|do not) (?:hate|dislike|mind) )(?P<v>)`), kPhrase, "user", "dislikes/%"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|don’t|do not) live in |` + iAm + ` no longer (?:living|based) in )(?P<v>)`), kPlace, "user", "home_city"},
	{regexp.MustCompile(`(?i:\bI (?:no longer|don't|don’t|do not) work (?:at|for) |` + iHave + ` (?:just )?(?:quit|left) (?:my job at |my job with )?)(?P<v>)`), kName, "user", "employer"},
	{regexp.MustCompile(`(?i:` + iAm + ` (?:not|no longer) (?:a |an )?)(?P<v>)(?i:vegetarian|vegan|pescatarian|diabetic|teetotal)\b`), kPhrase, "user", "diet"},
}

// anymoreRE: the statement says the fact changed.
var anymoreRE = regexp.MustCompile(`(?i)\b(?:anymore|any more|no longer|quit|left|these days|since)\b`)

// retract reads the retractions of s: each names a fact of the
// conversation or of memory (its subject and attribute) with the value
// retracted; a single value (home_city) is retracted only when it is the
// one the user names.
func (x *extractor) retract(m Message, s string) {
	if !anymoreRE.MatchString(s) {
		return
	}
	for _, r := range retractions {
		for _, loc := range r.re.FindAllStringSubmatchIndex(s, -1) {
			if hedged(s, loc[0], true) {
				continue
			}
			at := loc[2*r.re.SubexpIndex("v")]
			rest := s[at:]
			if r.attr == "diet" {
				rest = strings.Fields(rest)[0]
			}
			v := phrase(rest, r.k)
			if v == "" {
				continue
			}
			attr := strings.ReplaceAll(r.attr, "%", slug(v))
			if !strings.Contains(r.attr, "%") && !x.holds(r.subj, attr, v) {
				continue // "I don't live in Rome anymore" retracts Rome only
			}
			x.add(Fact{Subject: r.subj, Attribute: attr, Value: v, Type: Semantic, Confidence: 0.8, Retract: true,
				Statement: s, MessageIDs: []string{m.ID}, Seq: m.Seq, Rule: "retract"})
		}
	}
}

// holds reports whether the conversation so far or memory holds value v
// for subject/attr.
func (x *extractor) holds(subj, attr, v string) bool {
	for _, f := range x.earlier(len(x.out)) {
		if f.Subject == subj && f.Attribute == attr && strings.EqualFold(f.Value, v) && !f.Retract {
			return true
		}
	}
	return false
}
