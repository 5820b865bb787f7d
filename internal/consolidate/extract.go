package consolidate

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
)

// MaxInstructionWords bounds an instruction kept as a procedural entry.
const MaxInstructionWords = 40

// MaxContextWords bounds the sentence an entry quotes: a longer one is no
// statement of a fact but a story, and is not read.
const MaxContextWords = 60

// maxSentenceBytes bounds a sentence read (a "word" can be long too).
const maxSentenceBytes = 1000

// Extract returns the facts the user states in msgs, in the order they
// were stated. known are facts already in memory (the user's scope): a
// statement that names a known value as replaced corrects it, and a name
// known as a relative's ("my son Leo") makes that relative the subject of
// a later "Leo turns 6 on March 3rd". A value stated twice for one key is
// one fact (its message ids merged); a new value for a key is a new fact
// after the old one, so the writer keeps both in the key's history.
func Extract(msgs []Message, known []Fact) []Fact {
	x := newExtractor(known)
	for i, m := range msgs {
		if !m.User {
			continue
		}
		var q *Message // the other speaker's message this one may answer
		if i > 0 && !msgs[i-1].User {
			q = &msgs[i-1]
		}
		x.message(m, q)
	}
	return x.merged()
}

type extractor struct {
	known []Fact
	out   []Fact
	// people maps a name (lower case) to the subject it names ("leo" →
	// "son"), from this conversation and the known facts.
	people map[string]string
}

func newExtractor(known []Fact) *extractor {
	x := &extractor{known: known, people: map[string]string{}}
	for _, k := range known {
		if k.Attribute == "name" && k.Subject != "user" && k.Subject != "we" {
			x.people[strings.ToLower(k.Value)] = k.Subject
		}
	}
	return x
}

// stmt is one sentence of a user message, as the rules read it.
type stmt struct {
	m    Message
	said string // the sentence as the user said it (quotes normalized): what an entry quotes
	text string // what the rules read: said, with "I " before a sentence that leaves it out
	q    *Message
	// first: the message's first sentence (the one an answer starts with).
	first bool
}

func (x *extractor) message(m Message, q *Message) {
	// other: the message (or the question it answers) speaks of someone
	// else; a sentence that leaves its subject out is then not the
	// user's ("Dad retired last year. Moved to Florida.").
	other := q != nil && askOtherRE.MatchString(lastSentence(q.Text))
	pet := false // the sentence before got the user a pet
	for si, s := range facts.Sentences(codeRE.ReplaceAllString(m.Text, "\n")) {
		s = normalize(s)
		if s == "" || len(s) > maxSentenceBytes || len(strings.Fields(s)) > MaxContextWords {
			continue
		}
		text := s
		if head, _, ok := strings.Cut(s, " - "); ok && isQuestion(s) {
			text = head // "I finished my first bowl - want to see?": a statement, then a question
		}
		if loc := tagQuestionRE.FindStringIndex(text); loc != nil && loc[0] > 0 {
			text = text[:loc[0]] + "." // "I'm a dental assistant, did I ever tell you?"
		}
		t := texting(text)
		if !other {
			t = withSubject(t)
		}
		other = other || x.aboutOther(trimLeading(s))
		if pet && petIntroRE.MatchString(t) {
			t = "I have " + strings.ToLower(t[:1]) + t[1:] // "We got a puppy! A golden retriever named Mango."
		}
		st := &stmt{m: m, said: s, text: expand(t), q: q, first: si == 0}
		n := len(x.out)
		x.sentence(st)
		pet = false
		for _, f := range x.out[n:] {
			pet = pet || strings.HasPrefix(f.Attribute, "pet/")
		}
	}
}

// petIntroRE: a sentence that names the pet the sentence before got ("A
// golden retriever named Mango.").
var petIntroRE = regexp.MustCompile(`(?i)^(?:a|an) (?:[a-z-]+ ){0,2}` + alt(animals) + `,? (?:named|called) [A-Z]`)

// askOtherRE: a question about someone else ("How's your dad?", "What
// about Jake?").
var askOtherRE = regexp.MustCompile(`(?i)\b(?:your (?:[a-z]+ )?` + relWord + `s?|(?:how(?:'s| is| are)|what about|and) (?:he|she|they|(?-i:[A-Z][a-z]+))|(?:is|does|did|has) (?:he|she|they)|(?:him|her|them))\b`)

// otherLeadRE: a sentence whose subject is someone else: a pronoun, "my
// sister", a name ("Jake's great!", "Mom is good.").
var otherLeadRE = regexp.MustCompile(`^(?:(?i:he|she|they)\b|(?i:his|her|their|my|our) ` + relWord + `s?\b|(?P<name>[A-Z][a-z]+)(?:'s\b| (?:is|was|has|had|just|got|still|moved|started|retired|lives|works|loves)\b))`)

// aboutOther reports whether sentence s speaks of someone else.
func (x *extractor) aboutOther(s string) bool {
	m := otherLeadRE.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	name := strings.ToLower(m[otherLeadRE.SubexpIndex("name")])
	return name == "" || !(leadWords[name] || interjections[name] || notNameWords[name] && !relations[name] || name == "it" || name == "that" || name == "this" || name == "there" || name == "what")
}

// tagQuestionRE: a question tagged on a statement ("…, did I ever tell
// you?", "…, right?"): the statement stands.
var tagQuestionRE = regexp.MustCompile(`(?i),? (?:did I (?:ever )?(?:tell|mention)(?: (?:it|that|this))?(?: to)?(?: you)?(?: before)?|have I (?:ever )?(?:told|mentioned)(?: (?:it|that|this))?(?: to)?(?: you)?(?: before)?|right|you know|ya know|remember|did you know|isn't it|huh)\?$`)

// subjectlessRE: a sentence that starts with a verb of the first person
// and leaves "I" out ("Lost my job as a banker yesterday", "Just got
// back from Paris").
var subjectlessRE = regexp.MustCompile(`^(?:(?:just|finally|recently|also|so|and|oh|well|btw),? )*(?:lost|got|went|started|joined|finished|signed|adopted|moved|bought|visited|took|began|launched|opened|booked|quit|left|ran|won|passed|been|had|spent|tried|enrolled|registered|volunteered|attended|made|painted|wrote)\b`)

// subjectlessStateRE: a subject-less statement of a state ("allergic to
// peanuts btw").
var subjectlessStateRE = regexp.MustCompile(`(?i)^(?:(?:also|oh|and|btw|fyi),? )*(?:severely |very |really )?allergic to\b`)

// stillJobRE: "Yep, still an ICU nurse at Northwestern": what the user
// still is, the subject left out.
var stillJobRE = regexp.MustCompile(`(?i)^((?:(?:yep|yeah|yes|yup)[,!.]? )?)((?:still|now|currently) (?:a|an) )`)

// withSubject gives a subject-less first-person sentence its "I".
func withSubject(s string) string {
	if m := stillJobRE.FindStringSubmatchIndex(s); m != nil {
		return s[:m[3]] + "I'm " + s[m[4]:] // "Yep, still a nurse": "Yep, I'm still a nurse"
	}
	lead := trimLeading(s)
	if subjectlessStateRE.MatchString(lead) {
		return s[:len(s)-len(lead)] + "I'm " + strings.ToLower(lead[:1]) + lead[1:]
	}
	if subjectlessRE.MatchString(strings.ToLower(lead)) {
		return s[:len(s)-len(lead)] + "I " + strings.ToLower(lead[:1]) + lead[1:]
	}
	return s
}

// contractions the rules read spelled out.
var contractions = strings.NewReplacer("I've ", "I have ", "I'm ", "I am ", "We've ", "We have ", "we've ", "we have ",
	"We're ", "We are ", "we're ", "we are ", "I'll ", "I will ", "We'll ", "We will ", "we'll ", "we will ",
	"I'd love", "I would love", "I'd like", "I would like", "I'd rather", "I would rather", "I'd much rather", "I would much rather", "I'd prefer", "I would prefer", "I'd be", "I would be")

// expand spells out the contractions of the first person ("I've been" →
// "I have been"), so one pattern reads both.
func expand(s string) string { return contractions.Replace(s) }

// sentence reads one sentence.
func (x *extractor) sentence(st *stmt) {
	if isQuestion(st.text) {
		return // a question states nothing
	}
	n := len(x.out)
	x.rules(st)
	x.tidy(n)
	x.instruction(st)
	if st.first && st.q != nil && len(x.out) == n {
		x.answer(st)
	}
	x.correct(st, n)
	x.retract(st, n)
	x.nowAfterRetract(st, n)
	x.replaceOfMany(st, n)
}

func isQuestion(s string) bool {
	return strings.HasSuffix(strings.TrimRight(s, `"') `), "?")
}

// clauseBreakRE separates clauses.
var clauseBreakRE = regexp.MustCompile(`(?i)[;:!?()]|[,.](?:\s|$)|\s[-—–]\s|\s(?:and|but|so|because|cause|'cause|cuz|cos|coz|while|although|though|which|who|when|whereas|plus|then|or)\s`)

// clauseStart is where the clause holding position at begins.
func clauseStart(s string, at int) int {
	start := 0
	for _, loc := range clauseBreakRE.FindAllStringIndex(s[:at], -1) {
		start = loc[1]
	}
	return start
}

// clauseEnd is where the clause holding position from ends.
func clauseEnd(s string, from int) int {
	if from >= len(s) {
		return len(s)
	}
	if loc := clauseBreakRE.FindStringIndex(s[from:]); loc != nil {
		return from + loc[0]
	}
	return len(s)
}

// leadWords may come before a statement in its clause ("Oh, and
// actually I moved to Porto", "Last week I joined a choir").
var leadWords = set(`actually also and but so well oh plus now just recently finally btw honestly anyway anyways yeah
yes ok okay haha lol um hmm wow then today yesterday lately currently last this next week month year weekend night
morning earlier ago guess what fun fact by the way news update big good exciting great quick i mean hey guys side
note speaking of which luckily sadly unfortunately fortunately thankfully anyhow ah aw aww yay omg wait sorry
please you know what officially like even still in on`)

// leadPhraseRE: phrases that open a statement without being part of it
// ("since we last spoke I got …").
var leadPhraseRE = regexp.MustCompile(`(?i)\b(?:since (?:we|I) (?:last )?(?:spoke|talked|chatted|caught up|saw each other)|a lot(?:'s| has) happened|guess what|you won't believe it|you know what|not gonna lie|to be honest|on top of that|in other news|these days|nowadays|scratch that|I meant|correction|my bad|oops|turns out|it turns out|(?:please |just )?remember(?: that)?|as (?:you know|I said|I mentioned)|like I said|like I mentioned|just so you know|for the record|fyi)\b`)

// anchored reports whether the statement matched at position at starts
// its clause: only lead words (and a date) before it. A statement inside
// another ("I think I'm …", "she said I …", "when I was a kid I …") is not.
func anchored(s string, at int) bool {
	left := leadPhraseRE.ReplaceAllString(s[clauseStart(s, at):at], " ")
	for _, d := range findDates(left, 0, false) {
		left = left[:d.start] + strings.Repeat(" ", d.end-d.start) + left[d.end:]
	}
	for _, w := range strings.Fields(left) {
		if w = strings.ToLower(strings.Trim(w, ",.!")); w != "" && !leadWords[w] {
			return false
		}
	}
	return true
}

// hedged reports whether what the sentence says at position at is no
// fact: inside a quotation, someone else's words or text the user asks
// for, or under a condition or a belief ("if I move to …", "I think …",
// "maybe …").
func hedged(s string, at int, weak bool) bool {
	pre := discourseRE.ReplaceAllString(s[:at], " ")
	if strings.Count(pre, `"`)%2 == 1 {
		return true
	}
	for _, loc := range reportedRE.FindAllStringIndex(pre, -1) {
		if w := strings.Fields(pre[:loc[0]]); len(w) == 0 || (w[len(w)-1] != "I" && w[len(w)-1] != "i") {
			return true // someone else's words ("like I said" are the user's)
		}
	}
	if weak {
		return hedgeWeakRE.MatchString(pre)
	}
	return hedgeRE.MatchString(pre)
}

// discourseRE: what the user says about saying it ("I should mention, …")
// hedges nothing.
var discourseRE = regexp.MustCompile(`(?i)\bI (?:should|must|have to|gotta|need to|wanted to|want to|ought to) (?:say|mention|add|tell you|admit|confess|point out|warn you)\b`)

// hedgeRE: a statement after one of these in its sentence is no fact.
var hedgeRE = regexp.MustCompile(`(?i)\b(?:if|unless|whether|would|could|might|maybe|perhaps|wish|hope|hoping|imagine|imagining|pretend|suppose|supposing|think|thought|guess|probably|possibly|someday|one day|dream|dreaming|wonder|wondering|not sure|don't know|apparently|supposedly|what if|as if|in case|should)\b`)

// hedgeWeakRE: for statements whose own words hold a negation ("I don't
// like …"), only these hedge.
var hedgeWeakRE = regexp.MustCompile(`(?i)\b(?:if|unless|whether|might|maybe|perhaps|would|could|wonder|pretend|imagine|suppose|hypothetically)\b`)

// reportedRE: a statement after one of these in its sentence is someone
// else's words ("my friend said: I moved to Paris"), or text the user
// asks for ("write a letter that starts with: I am a nurse").
var reportedRE = regexp.MustCompile(`(?i)\b(?:said|says|told me|tells me|asked|asks|wrote|writes|quote|quoting|the message reads|texted|write|draft|compose|translate|rephrase|rewrite|reword|proofread|summarize|summarise|pretend|roleplay|role-play|role play|starts with|example|template|sample|character|story|poem|script|lyrics|caption|sign that|reads)\b`)

// trimLeading strips discourse markers ("Also, ", "Okay, ") from the
// start of s.
func trimLeading(s string) string {
	for changed := true; changed; {
		changed = false
		for _, f := range facts.LeadingFiller {
			if len(s) > len(f) && strings.EqualFold(s[:len(f)], f) {
				s, changed = strings.TrimSpace(s[len(f):]), true
			}
		}
		for _, f := range []string{"oh ", "and ", "so ", "btw ", "btw, ", "by the way, ", "oh, ", "wow, ", "haha, ", "haha ", "ah, ", "lol, ", "but ", "plus "} {
			if len(s) > len(f) && strings.EqualFold(s[:len(f)], f) {
				s, changed = strings.TrimSpace(s[len(f):]), true
			}
		}
	}
	return s
}

// add appends f (from st), with its source and when it was said.
func (x *extractor) add(st *stmt, f Fact) {
	f.Value = strings.TrimSpace(f.Value)
	if f.Type == Semantic {
		f.Value = trimValue(f.Value)
	}
	if f.Value == "" || f.Subject == "" || f.Attribute == "" {
		return
	}
	if st != nil {
		if f.Statement == "" {
			f.Statement = st.said
		}
		if f.Context == "" {
			f.Context = st.said
		}
		if len(f.MessageIDs) == 0 {
			f.MessageIDs = []string{st.m.ID}
		}
		if f.Seq == 0 {
			f.Seq = st.m.Seq
		}
		if f.Said == 0 {
			f.Said = st.m.Said
		}
	}
	if f.Attribute == "name" && f.Subject != "user" && f.Subject != "we" {
		if _, ok := x.people[strings.ToLower(f.Value)]; !ok {
			x.people[strings.ToLower(f.Value)] = f.Subject
		}
	}
	x.out = append(x.out, f)
}

// valueLead and valueTail are words around a value that are no part of
// it ("actually Arcade Fire", "Porto instead").
var (
	valueLead = regexp.MustCompile(`(?i)^(?:(?:actually|now|still|really|honestly|definitely|currently|officially|finally|also)\s+)+`)
	valueTail = regexp.MustCompile(`(?i)(?:\s+(?:instead|now|anymore|any more|these days|nowadays|too|again|lol|haha))+$`)
)

// trimValue strips the words around a value that are no part of it; a
// value of those words alone is kept as it is.
func trimValue(v string) string {
	t := valueTail.ReplaceAllString(valueLead.ReplaceAllString(v, ""), "")
	if strings.TrimSpace(t) == "" {
		return v
	}
	return strings.TrimSpace(t)
}

// merged returns x.out with a value restated for its key merged into its
// earlier statement (message ids joined, the higher confidence kept), and
// a statement read twice from one sentence once; a retraction followed in
// its message by a new value for its key is that value's Replaces.
func (x *extractor) merged() []Fact {
	x.nearDuplicates()
	var fs []Fact
	for i, f := range x.out {
		if f.Retract && i+1 < len(x.out) {
			if g := &x.out[i+1]; g.Key() == f.Key() && !g.Retract && g.MessageIDs[0] == f.MessageIDs[0] {
				g.Correction, g.Replaces = true, f.Value
				continue
			}
		}
		fs = append(fs, f)
	}
	cur := map[string]Fact{} // key -> its value, the known ones first
	for _, k := range x.known {
		cur[k.Key()] = k
	}
	for i := range fs { // a new value for a key replaces the one before
		f := &fs[i]
		if f.Retract {
			delete(cur, f.Key())
			continue
		}
		if old, ok := cur[f.Key()]; ok && !sameValue(old, *f) && f.Replaces == "" && !anotherTime(old, *f) {
			f.Correction, f.Replaces = true, old.Value
		}
		cur[f.Key()] = *f
	}
	var out []Fact
	last := map[string]int{} // key -> index in out of its newest value
	for _, f := range fs {
		k := f.Key()
		if i, ok := last[k]; ok && sameValue(out[i], f) && out[i].Retract == f.Retract {
			for _, id := range f.MessageIDs {
				if !slices.Contains(out[i].MessageIDs, id) {
					out[i].MessageIDs = append(out[i].MessageIDs, id)
				}
			}
			out[i].Confidence = max(out[i].Confidence, f.Confidence)
			continue
		}
		last[k] = len(out)
		out = append(out, f)
	}
	return out
}

// anotherTime reports whether f is one more time of old's kind of event
// ("I went to a pride parade last Friday" after one in June): both
// dated, on other dates, and of a key of many values. It replaces
// nothing.
func anotherTime(old, f Fact) bool {
	return strings.Contains(f.Attribute, "/") && old.Date != "" && f.Date != "" && old.Date != f.Date
}

// sameValue reports whether a and b hold one value: the same words, and
// the same date when both name one ("Madrid" on June 12 is not "Madrid"
// on June 14).
func sameValue(a, b Fact) bool {
	if !strings.EqualFold(a.Value, b.Value) {
		return false
	}
	if a.Date != "" && b.Date != "" {
		return a.Date == b.Date
	}
	return a.When == "" || b.When == "" || strings.EqualFold(a.When, b.When)
}

// nearDuplicates files a value of many (likes/jazz_music) under the key
// of an earlier one of its kind whose words it holds, or that holds its
// words (likes/jazz): one entry, not two.
func (x *extractor) nearDuplicates() {
	seen := slices.Clone(x.known)
	for i := range x.out {
		f := &x.out[i]
		kind, _, many := strings.Cut(f.Attribute, "/")
		if many && mergeable[kind] && !isNumber(f.Value) {
			for _, o := range seen {
				ok, _, omany := strings.Cut(o.Attribute, "/")
				if omany && o.Subject == f.Subject && ok == kind && o.Attribute != f.Attribute && wordsWithin(o.Value, f.Value) {
					f.Attribute = o.Attribute
					break
				}
			}
		}
		seen = append(seen, *f)
	}
}

// mergeable: the kinds of many values a near-duplicate merges in.
var mergeable = set(`likes dislikes prefers hobby allergy avoids speaks`)

// wordsWithin reports whether the words of a are all in b, or those of b
// all in a.
func wordsWithin(a, b string) bool {
	wa, wb := strings.Fields(strings.ToLower(a)), strings.Fields(strings.ToLower(b))
	in := func(xs, ys []string) bool {
		for _, x := range xs {
			if !slices.Contains(ys, x) {
				return false
			}
		}
		return len(xs) > 0
	}
	return in(wa, wb) || in(wb, wa)
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

// heldEver reports whether memory or the conversation so far held value
// v for subject/attr at any time.
func (x *extractor) heldEver(subj, attr, v string) bool {
	for _, fs := range [][]Fact{x.known, x.out} {
		for _, f := range fs {
			if f.Subject == subj && f.Attribute == attr && strings.EqualFold(f.Value, v) && !f.Retract {
				return true
			}
		}
	}
	return false
}

// codeRE: code is no statement.
var codeRE = regexp.MustCompile("(?s)```.*?(?:```|$)|`[^`\n]*`")
