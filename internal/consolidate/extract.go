package consolidate

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
)

// MaxInstructionWords bounds an instruction kept as a procedural entry.
const MaxInstructionWords = 40

// Extract returns the facts the user states in msgs, in the order they
// were stated. known are facts already in memory (the user's scope): a
// statement that names a known value as replaced corrects it. A value
// stated twice for one key is one fact (its message ids merged); a new
// value for a key is a new fact after the old one, so the writer keeps
// both in the key's history.
func Extract(msgs []Message, known []Fact) []Fact {
	x := &extractor{known: known}
	for i, m := range msgs {
		if !m.User {
			continue
		}
		var prev *Message
		if i > 0 && !msgs[i-1].User {
			prev = &msgs[i-1]
		}
		x.message(m, prev)
	}
	return x.merged()
}

type extractor struct {
	known []Fact
	out   []Fact
	// context: what "the teacher", "he" and "the wedding" are about (the
	// latest mention in the conversation).
	activity, thing, item, rel string
	// named: the pet or relative mentioned last ("her name is …").
	named string
}

func (x *extractor) message(m Message, prev *Message) {
	if prev != nil {
		x.context(prev.Text) // "Who's teaching it?" names nothing, "What are you calling the puppy?" may
	}
	sents := facts.Sentences(codeRE.ReplaceAllString(m.Text, "\n"))
	from := make([]int, len(sents)+1) // facts of sentence si: x.out[from[si]:from[si+1]]
	for si, s := range sents {
		from[si] = len(x.out)
		x.sentence(m, prev, s, si)
	}
	from[len(sents)] = len(x.out)
	for si := range sents {
		alone := si+1 < len(sents) && from[si+2] == from[si+1] // the next sentence states no fact of its own
		for i := from[si]; i < from[si+1]; i++ {
			x.out[i].Context = maskOthers(contextOf(sents, si, alone), x.out[i], x.out[from[0]:])
		}
	}
}

// maskOthers replaces in the context of f the values of the other facts
// of its message with "…": a value corrected later must not live on in
// another entry ("my godmother Gwendolyn is relocating to …" for her
// name, when the city may change).
func maskOthers(ctx string, f Fact, others []Fact) string {
	for _, o := range others {
		if o.Key() == f.Key() || len(o.Value) < 3 || strings.Contains(strings.ToLower(f.Value), strings.ToLower(o.Value)) {
			continue
		}
		re, err := regexp.Compile(`(?i)\b` + regexp.QuoteMeta(o.Value) + `\b`)
		if err == nil {
			ctx = re.ReplaceAllString(ctx, "…")
		}
	}
	return ctx
}

// MaxContextWords bounds a fact's Context.
const MaxContextWords = 40

// contextOf is sentence si with the next one when that one carries on
// ("We went for a half marathon.") and states no fact of its own (next:
// a value that may be corrected later must not live on in another
// entry), at most MaxContextWords words.
func contextOf(sents []string, si int, next bool) string {
	c := sents[si]
	if next && !strings.HasSuffix(sents[si+1], "?") {
		c += " " + sents[si+1]
	}
	w := strings.Fields(c)
	if len(w) > MaxContextWords {
		w = append(w[:MaxContextWords], "…")
	}
	return strings.Join(w, " ")
}

// sentence reads sentence si (s) of m.
func (x *extractor) sentence(m Message, prev *Message, s string, si int) {
	x.context(s)
	if strings.HasSuffix(strings.TrimRight(s, `"')’ `), "?") {
		return // a question states nothing
	}
	n := len(x.out)
	x.rules(m, s)
	x.instruction(m, s)
	if si == 0 && prev != nil && len(x.out) == n {
		x.answer(m, s, prev)
	}
	if len(x.out) == n {
		x.elliptical(m, s)
	}
	x.correct(m, s, n)
	x.replaceOfMany(s, n)
}

// context updates what the message is about from sentence s.
func (x *extractor) context(s string) {
	if m := activityRE.FindStringSubmatch(s); m != nil {
		a := m[1]
		if a == "" {
			a = m[2]
		}
		x.activity = "activity/" + slug(a)
	}
	if m := thingRE.FindStringSubmatch(s); m != nil {
		t := m[1]
		if t == "" {
			t = m[2]
		}
		x.thing = "pet/" + slug(lastWords(t, 2))
		x.named = x.thing
	}
	if m := itemRE.FindStringSubmatch(s); m != nil {
		t := m[1]
		if t == "" {
			t = m[2]
		}
		x.item = slug(lastWords(t, 2))
	}
	if m := relMentionRE.FindStringSubmatch(s); m != nil {
		x.rel = slug(m[relMentionRE.SubexpIndex("rel")])
		x.named = x.rel
	}
}

// shorten cuts v before its first word in -ing after the first, and to n
// words ("knee playing football" → "knee").
func shorten(v string, n int) string {
	w := strings.Fields(v)
	for i := 1; i < len(w); i++ {
		if strings.HasSuffix(strings.ToLower(w[i]), "ing") {
			w = w[:i]
			break
		}
	}
	if len(w) > n {
		w = w[:n]
	}
	return strings.Join(w, " ")
}

func lastWords(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		w = w[len(w)-n:]
	}
	return strings.Join(w, " ")
}

// hedged reports whether the clause of s before position at makes what
// follows no fact ("if I move to …", "I don't think I'm …").
func hedged(s string, at int, weak bool) bool {
	pre := s[:at]
	if strings.Count(pre, `"`)%2 == 1 || strings.Count(pre, "“") > strings.Count(pre, "”") {
		return true // inside a quotation
	}
	for _, loc := range reportedRE.FindAllStringIndex(pre, -1) {
		if w := strings.Fields(pre[:loc[0]]); len(w) == 0 || (w[len(w)-1] != "I" && w[len(w)-1] != "i") {
			return true // someone else's words ("like I said" are the user's)
		}
	}
	if i := strings.LastIndexAny(pre, ",;:—"); i >= 0 {
		pre = pre[i+1:]
	}
	if weak {
		return hedgeWeakRE.MatchString(pre)
	}
	return hedgeRE.MatchString(pre)
}

func (x *extractor) rules(m Message, s string) {
	for _, r := range rules {
		for _, loc := range r.re.FindAllStringSubmatchIndex(s, -1) {
			at := loc[2*r.re.SubexpIndex("v")]
			if hedged(s, loc[0], strings.Contains(r.name, "dislike") || r.name == "avoid") {
				continue
			}
			subject := r.subj
			switch subject {
			case "rel":
				if gi := r.re.SubexpIndex("rel"); gi > 0 && loc[2*gi] >= 0 {
					subject = slug(s[loc[2*gi]:loc[2*gi+1]])
				} else if x.rel != "" {
					subject = x.rel
				} else {
					continue
				}
			case "thing":
				if gi := r.re.SubexpIndex("thing"); gi > 0 && loc[2*gi] >= 0 {
					subject = "pet/" + slug(s[loc[2*gi]:loc[2*gi+1]])
				} else if x.named != "" {
					subject = x.named
				} else {
					continue
				}
			case "activity":
				if x.activity == "" {
					continue
				}
				subject = x.activity
			}
			attr := r.attr
			if gi := r.re.SubexpIndex("attr"); gi > 0 && loc[2*gi] >= 0 {
				attr = strings.ReplaceAll(attr, "@", slug(s[loc[2*gi]:loc[2*gi+1]]))
			}
			rest := s[at:]
			switch r.name {
			case "count", "diet", "age":
				rest = strings.Fields(rest)[0]
			case "injury":
				rest = shorten(untilClause(rest), r.short)
			case "i-am-a": // the words up to the job word
				end := loc[1] - at
				rest = s[at : at+end]
			case "allergy-have":
				if i := allergRE.FindStringIndex(rest); i != nil { // the rule's regexp holds it
					rest = rest[:i[0]]
				}
			}
			var values []string
			switch {
			case r.name == "my-attr": // an email, a date, a number: up to the clause's end
				if v := untilClause(rest); v != "" && len(strings.Fields(v)) <= 6 && !pronounValues[strings.ToLower(v)] {
					values = []string{v}
				}
			case strings.Contains(attr, "#"):
				values = []string{phraseWithDate(rest)}
			case r.list:
				values = splitList(rest)
			default:
				if v := phrase(rest, r.k); v != "" {
					values = []string{v}
				}
			}
			if r.short > 0 && len(values) == 1 {
				values[0] = shorten(values[0], r.short)
			}
			date := "" // "Madrid on June 12": the key names the place, the value both
			if r.dated && len(values) == 1 {
				if i := strings.Index(rest, values[0]); i >= 0 {
					date = dateAfter(rest[i+len(values[0]):])
				}
			}
			for _, v := range values {
				a := strings.ReplaceAll(attr, "%", slug(v))
				if date != "" {
					v += " " + date
				}
				if strings.Contains(a, "#") {
					t := topic(v)
					if t == "" {
						continue
					}
					a = strings.ReplaceAll(a, "#", t)
				}
				if r.typ == Episodic { // an episode is what was tried and how it ended
					v = phraseWithDate(s)
					if n := len(strings.Fields(s)); n <= MaxInstructionWords {
						v = strings.TrimSpace(s)
					}
				}
				x.add(Fact{Subject: subject, Attribute: a, Value: v, Type: r.typ, Confidence: r.conf,
					Statement: s, MessageIDs: []string{m.ID}, Seq: m.Seq, Rule: r.name})
			}
		}
	}
	x.purchase(m, s)
	x.retract(m, s)
	if loc := decisionLetRE.FindStringSubmatchIndex(s); loc != nil && !hedged(s, loc[0], false) {
		if v := phraseWithDate(s[loc[2]:]); v != "" && !notDecisionRE.MatchString(v) && facts.HasKeyFact(" "+v) && topic(v) != "" && !strings.HasPrefix(strings.ToLower(v), "see") {
			x.add(Fact{Subject: "we", Attribute: "decision/" + topic(v), Value: phraseWithDate(s[loc[2]:]), Type: Semantic, Confidence: 0.65,
				Statement: s, MessageIDs: []string{m.ID}, Seq: m.Seq, Rule: "lets"})
		}
	}
}

// clauseEndRE ends a clause: punctuation before a space or the end, or a
// conjunction.
var clauseEndRE = regexp.MustCompile(`(?i)[,;!?()]|[.:](?:\s|$)|\s(?:and|but|because|so|since|which|though|although)\s`)

// untilClause is s up to its clause's end, trimmed.
func untilClause(s string) string {
	if loc := clauseEndRE.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	return strings.TrimSpace(s)
}

// dateOnRE: " on June 12", " in April", " next Tuesday" right after a value.
var dateOnRE = regexp.MustCompile(`^\s*(?:(?:on|in|for|this|next|by) )?((?:[A-Z][a-z]+|\d{1,4}(?:st|nd|rd|th)?)(?: (?:[A-Z][a-z]+|\d{1,4}(?:st|nd|rd|th)?),?){0,2})`)

// dateAfter is the date right at the start of s ("on June 12"), "" when
// there is none.
func dateAfter(s string) string {
	m := dateOnRE.FindStringSubmatchIndex(s)
	if m == nil {
		return ""
	}
	d := strings.TrimRight(s[m[2]:m[3]], ", ")
	for _, w := range strings.Fields(d) {
		if !isDatePart(w) {
			return ""
		}
	}
	return strings.TrimSpace(s[:m[3]])
}

// phraseWithDate is a decision's value: up to the clause boundary, its
// date kept ("ship on Friday").
func phraseWithDate(s string) string {
	if loc := decisionEndRE.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	w := strings.Fields(strings.TrimRight(s, "."))
	if len(w) > 8 {
		w = w[:8]
	}
	return strings.Join(w, " ")
}

// purchase reads "I bought a standing desk … paid $450".
func (x *extractor) purchase(m Message, s string) {
	if x.item == "" {
		return
	}
	p := priceRE.FindStringSubmatchIndex(s)
	if p == nil || hedged(s, p[0], true) {
		return
	}
	x.add(Fact{Subject: "user", Attribute: "purchase/" + x.item, Value: strings.TrimRight(s[p[2]:p[3]], ",."), Type: Semantic, Confidence: 0.75,
		Statement: s, MessageIDs: []string{m.ID}, Seq: m.Seq, Rule: "purchase"})
}

// trimLeading strips discourse markers ("Also, ", "Okay, ") from the start
// of s.
func trimLeading(s string) string {
	for changed := true; changed; {
		changed = false
		for _, f := range facts.LeadingFiller {
			if len(s) > len(f) && strings.EqualFold(s[:len(f)], f) {
				s, changed = strings.TrimSpace(s[len(f):]), true
			}
		}
	}
	return s
}

// instruction reads a refined instruction ("from now on, answer in
// Spanish").
func (x *extractor) instruction(m Message, s string) {
	lead := trimLeading(s)
	loc := instructionRE.FindStringIndex(lead)
	if loc == nil || hedgeWeakRE.MatchString(lead[:loc[0]]) {
		return
	}
	w := strings.Fields(s)
	if len(w) > MaxInstructionWords {
		return
	}
	v := strings.TrimRight(s, " ")
	t := topicOf(untilClause(instructionLeadRE.ReplaceAllString(lead[loc[0]:], "")), true)
	if t == "" {
		return
	}
	x.add(Fact{Subject: "user", Attribute: t, Value: v, Type: Procedural, Confidence: 0.8,
		Statement: s, MessageIDs: []string{m.ID}, Seq: m.Seq, Rule: "instruction"})
}

// answer reads a value given in answer to the assistant's question
// ("Who's teaching it?" "Mara, a retired architect."; "What are you
// calling him?" "Biscuit!").
func (x *extractor) answer(m Message, s string, prev *Message) {
	q := strings.ToLower(prev.Text)
	if !strings.Contains(q, "?") {
		return
	}
	v := capitalized(s, kName)
	if v == "" || facts.FillerWords[strings.ToLower(v)] || interjections[strings.ToLower(v)] {
		return
	}
	var subject, attr string
	switch {
	case x.activity != "" && askTeacherRE.MatchString(q):
		subject, attr = x.activity, "teacher"
	case x.thing != "" && askNameRE.MatchString(q):
		subject, attr = x.thing, "name"
	case askUserNameRE.MatchString(q):
		subject, attr = "user", "name"
	default:
		return
	}
	x.add(Fact{Subject: subject, Attribute: attr, Value: v, Type: Semantic, Confidence: 0.7,
		Statement: s, MessageIDs: []string{prev.ID, m.ID}, Seq: m.Seq, Rule: "answer"})
}

// interjections open a reply but name nothing ("Wow, …").
var interjections = map[string]bool{"wow": true, "oh": true, "ah": true, "aw": true, "aww": true, "haha": true, "lol": true,
	"omg": true, "ugh": true, "hmm": true, "nope": true, "yay": true, "ooh": true, "whoa": true, "honestly": true,
	"actually": true, "sadly": true, "luckily": true, "oops": true, "definitely": true, "totally": true, "not": true, "nobody": true, "none": true}

// add appends f.
func (x *extractor) add(f Fact) {
	f.Value = strings.TrimSpace(f.Value)
	if f.Value == "" || f.Subject == "" || f.Attribute == "" {
		return
	}
	x.out = append(x.out, f)
}

// merged returns x.out with a value restated for its key merged into its
// earlier statement (message ids joined, the higher confidence kept), and
// a statement read twice from one sentence once.
func (x *extractor) merged() []Fact {
	x.nearDuplicates()
	cur := map[string]string{} // key -> value, the known ones first
	for _, k := range x.known {
		cur[k.Key()] = k.Value
	}
	for i := range x.out { // a new value for a key replaces the one before
		f := &x.out[i]
		if f.Retract {
			delete(cur, f.Key())
			continue
		}
		if old, ok := cur[f.Key()]; ok && !strings.EqualFold(old, f.Value) && f.Replaces == "" {
			f.Correction, f.Replaces = true, old
		}
		cur[f.Key()] = f.Value
	}
	var out []Fact
	last := map[string]int{} // key -> index in out of its newest value
	for _, f := range x.out {
		k := f.Key()
		if i, ok := last[k]; ok && strings.EqualFold(out[i].Value, f.Value) && out[i].Retract == f.Retract {
			for _, id := range f.MessageIDs {
				if !contains(out[i].MessageIDs, id) {
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

// nearDuplicates files a value of many (likes/jazz_music) under the key
// of an earlier one of its kind whose words it holds, or that holds its
// words (likes/jazz): one entry, not two.
func (x *extractor) nearDuplicates() {
	var seen []Fact
	seen = append(seen, x.known...)
	for i := range x.out {
		f := &x.out[i]
		kind, _, many := strings.Cut(f.Attribute, "/")
		if many && shapeOf(f.Value) != kMoney && !isNumber(f.Value) {
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

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Patterns used above, compiled once.
var (
	codeRE            = regexp.MustCompile("(?s)```.*?(?:```|$)|`[^`\n]*`") // code is no statement
	allergRE          = regexp.MustCompile(`(?i) allerg`)
	decisionEndRE     = regexp.MustCompile(`[,;!?()]|[.:](?:\s|$)|\s(?:and|but|because|so|since|which)\s`)
	instructionLeadRE = regexp.MustCompile(`(?i)^(?:please,? )?(?:always|never|from now on,?|going forward,?|in (?:the )?future,?|next time,?|don't ever|do not ever|I want you to)\s*`)
	askTeacherRE      = regexp.MustCompile(`\b(?:who(?:'s|’s| is)? (?:teaching|running|leading|coaching)|who (?:teaches|runs|leads|coaches)|teacher|instructor|coach)\b`)
	askNameRE         = regexp.MustCompile(`\b(?:calling|call|name|named)\b`)
	askUserNameRE     = regexp.MustCompile(`\bwhat(?:'s|’s| is) your name\b`)
	nowRE             = regexp.MustCompile(`(?i)\b(?:now|instead|anymore|these days|no longer|nowadays)\b`)
	copulaRE          = regexp.MustCompile(`(?i)\b(?:is|was|be|it's|it’s|are)\s+`)
	newValueMarkRE    = regexp.MustCompile(`(?i)\b(?:now|to|it's|it’s|is|was|actually|instead)\s+`)
)
