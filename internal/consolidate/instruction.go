package consolidate

import (
	"regexp"
	"strconv"
	"strings"
)

// Instructions: an imperative addressed to the assistant about how to
// help, meant to last — "please always answer in French", "don't suggest
// meat recipes", "from now on, reply in Spanish", "I want you to stop
// using emojis". Its verb is one of helping (answer, reply, write,
// suggest, use, call me, …) and it says it lasts (always, never, from now
// on, next time, don't, stop …). "Never give up!", "Always great chatting
// with you!" or "Don't forget to take breaks" are no instructions.

// instructionRE: the lead of an instruction, then its verb.
var instructionRE = regexp.MustCompile(`(?i)^(?:(?:please|pls|and|also|oh|ok|okay|so|from now on|going forward|in (?:the )?future|next time|for future reference|moving forward)[,:]? )*` +
	`(?P<mark>always |never |don't |do not |don't ever |do not ever |stop |please stop |no more )?(?:please )?(?:always |never )?` +
	`(?P<verb>` + assistantVerbs + `)\b`)

// wantRE: "I want you to …", "I'd like you to …".
var wantRE = regexp.MustCompile(`(?i)\bI (?:want|need|'d like|would like|prefer) (?:you|u) to (?P<mark>always |never |stop |please |start |keep )?(?P<verb>` + assistantVerbs + `)\b`)

// assistantVerbs: what an assistant does when it helps.
const assistantVerbs = `answer|reply|respond|write|use|using|suggest|suggesting|recommend|recommending|include|including|explain|show|format|translate|summarize|summarise|cite|mention|mentioning|call me|address me|refer to me|talk to me|speak to me|speak|talk|remind me|cc|list|give me|give us|keep (?:it|answers|replies|responses|your answers|your replies|them|things) (?:short|brief|concise|simple|under)|make (?:it|answers|replies|them) (?:short|shorter|brief|simple|simpler)|avoid|ask me|ask before|check with me|double-check|assume|bring up|offer|provide|put|sign|spell|skip|add|round|convert|measure|quote|show me|tell me|greet me|end with|start with|begin with|answer me|be (?:brief|concise|short|formal|informal|casual|direct)`

// markRE: the words that say an instruction lasts.
var markRE = regexp.MustCompile(`(?i)\b(?:always|never|from now on|going forward|in (?:the )?future|next time|for future reference|moving forward|don't|do not|stop|no more|anymore|every time|each time|whenever)\b`)

// mannerRE: an instruction that lasts by what it asks — the manner of
// every answer ("keep answers short", "use metric units", "reply in
// Spanish", "call me Jo") — needs no word saying it lasts; "keep it up"
// or "use your time well" ask no manner of answering.
var mannerRE = regexp.MustCompile(`(?i)^(?:keep (?:it|answers|replies|responses|your answers|your replies|them|things) (?:short|brief|concise|simple|under)|make (?:it|answers|replies|them) (?:short|shorter|brief|simple|simpler)|be (?:brief|concise|short|formal|informal|casual|direct)|call me|address me|refer to me|(?:answer|reply|respond|write|talk to me|speak to me) in (?:[A-Z][a-z]+|plain|simple|short|bullet)|use (?:metric|imperial|celsius|fahrenheit|british|american|uk|us|plain|simple|bullet|short|fewer|less|more|no)\b)`)

// conditionRE: an instruction under a condition is none.
var conditionRE = regexp.MustCompile(`(?i)\b(?:if|unless|whether|maybe|might|pretend|imagine|suppose|could you|would you)\b`)

// instruction reads a standing instruction from st.
func (x *extractor) instruction(st *stmt) {
	s := st.said
	if len(strings.Fields(s)) > MaxInstructionWords {
		return
	}
	lead := trimLeading(s)
	var rest string
	if loc := instructionRE.FindStringSubmatchIndex(lead); loc != nil {
		if mi := instructionRE.SubexpIndex("mark"); loc[2*mi] < 0 && !markRE.MatchString(lead) && !mannerRE.MatchString(lead[loc[2*instructionRE.SubexpIndex("verb")]:]) {
			return // "Please send me pics": a request, not a rule
		}
		rest = lead[loc[2*instructionRE.SubexpIndex("verb")]:]
	} else if loc := wantRE.FindStringSubmatchIndex(s); loc != nil && anchored(s, loc[0]) {
		rest = s[loc[2*wantRE.SubexpIndex("verb")]:]
	} else {
		return
	}
	if conditionRE.MatchString(s) || isQuestion(s) {
		return
	}
	t := topicOf(untilClause(rest), true)
	if t == "" {
		return
	}
	f := Fact{Subject: "user", Attribute: t, Value: strings.TrimSpace(s), Type: Procedural, Confidence: 0.8, Rule: "instruction"}
	if stopRE.MatchString(lead) {
		if old, ok := x.stoppedInstruction(rest); ok {
			f.Correction, f.Replaces = true, old.Value // "please stop including warm-up sets" ends "always include warm-up sets"
		}
	}
	x.add(st, f)
}

// stopRE: an instruction that ends one given before.
var stopRE = regexp.MustCompile(`(?i)^(?:(?:please|pls|and|also|oh|ok|okay|so)[,:]? )*(?:please )?(?:stop|no more|don't|do not)\b`)

// stoppedInstruction is the newest instruction before that the stop in
// rest ends: one that shares its content words ("include warm-up sets"
// for "including warm-up sets").
func (x *extractor) stoppedInstruction(rest string) (Fact, bool) {
	want := stems(untilClause(rest))
	for _, old := range x.earlier(len(x.out)) {
		if old.Type != Procedural || stopRE.MatchString(trimLeading(old.Value)) {
			continue
		}
		have := stems(old.Value)
		shared := 0
		for w := range want {
			if have[w] {
				shared++
			}
		}
		if shared >= 2 || (shared == 1 && len(want) == 1) {
			return old, true
		}
	}
	return Fact{}, false
}

// stems are the content words of s, cut to their first five letters
// ("including" and "include" share "inclu").
func stems(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(s)) {
		w = strings.Trim(w, ".,!?;:\"'")
		if len(w) < 3 || stopWords[w] || npStop[w] || w == "please" || w == "always" || w == "never" || w == "stop" {
			continue
		}
		if len(w) > 5 {
			w = w[:5]
		}
		out[w] = true
	}
	return out
}

// Answers: a value given in answer to the other speaker's question,
// read with it ("What do you do?" "Tram driver, in Lisbon."; "Where do
// you live?" "Lisbon."). A statement the rules read on its own ("I drive
// a tram") needs no question.
var (
	askJobRE = regexp.MustCompile(`(?i)\b(?:what do you do(?: for (?:work|a living))?|what(?:'s| is) your (?:job|profession|occupation|line of work)|what do you work as|what kind of work|what line of work)\b`)
	// askWorkRE: a question of work alone ("what do you do?" may go on
	// "… when it rains?"): any noun phrase answers it.
	askWorkRE     = regexp.MustCompile(`(?i)\b(?:what do you do(?: for (?:work|a living))?|what(?:'s| is) your (?:job|profession|occupation|line of work)|what do you work as|what kind of work do you do|what line of work are you in)\s*\?$`)
	askEmployerRE = regexp.MustCompile(`(?i)\b(?:where do you work|who do you work for|which company)\b`)
	askHomeRE     = regexp.MustCompile(`(?i)\b(?:where do you live|where are you based|where are you living|where do you stay|where(?:'s| is) home|are you (?:two |guys |both )?still (?:in|living in|based in))\b`)
	askFromRE     = regexp.MustCompile(`(?i)\b(?:where are you from|where did you grow up|where(?:'re| are) you originally from)\b`)
	askNameRE     = regexp.MustCompile(`(?i)\b(?:what(?:'s| is) your name|who am i (?:talking|speaking) (?:to|with)|what should i call you|how should i call you)\b`)
	askAllergyRE  = regexp.MustCompile(`(?i)\b(?:any (?:food )?allergies|allergic to anything|are you allergic|what are you allergic to|what allergies)\b`)
	askDietRE     = regexp.MustCompile(`(?i)\b(?:dietary (?:restrictions|requirements|needs|preferences)|any diet|do you eat meat|special diet)\b`)
	askHobbyRE    = regexp.MustCompile(`(?i)\b(?:what do you do for fun|(?:any|your|what are your|got any) hobbies|what do you (?:like|love|enjoy) (?:to do|doing)|in your (?:free|spare) time|what do you do to relax)\b`)
	askAgeRE      = regexp.MustCompile(`(?i)\bhow old are you\b`)
	askPetNameRE  = regexp.MustCompile(`(?i)\bwhat(?:'s| is| are| did| will) (?:the |your |their )?(?P<thing>` + relWord + `)(?:'s name|'s names| named| called| name)\b|\bwhat (?:are you|did you|will you) (?:calling|name|naming|call) (?:the|your) (?P<thing2>` + relWord + `)\b`)
)

// answerLeadRE: what an answer may start with before its value.
var answerLeadRE = regexp.MustCompile(`(?i)^(?:(?:oh|well|so|haha|lol|yeah|yes|yep|yup|sure|um|hmm|ha|actually)[,!.]? )*(?:I(?:'m| am) (?:a |an )?|I work as (?:a |an )?|I live in |in |at |I work at |I work for |I'm from |from |it's |his name is |her name is |its name is |we call (?:him|her|it) |we named (?:him|her|it) |my name is |I'm |call me )?`)

// answer reads a value the first sentence of st gives in answer to the
// question before it.
func (x *extractor) answer(st *stmt) {
	q := lastSentence(st.q.Text)
	if !isQuestion(q) {
		return
	}
	s := st.said
	if len(strings.Fields(s)) > 8 {
		return // an answer of a value is short; a longer one the rules read
	}
	rest := s[len(answerLeadRE.FindString(s)):]
	var subj, attr string
	var v string
	switch {
	case askAllergyRE.MatchString(q), askHobbyRE.MatchString(q):
		x.listAnswer(st, q, rest)
		return
	case askJobRE.MatchString(q):
		rest = rest[len(fragmentLeadRE.FindString(rest)):]
		w, _ := np(rest)
		if w == "" || noneRE.MatchString(rest) || !(headOK(w, jobs) || jobLike(w) || (askWorkRE.MatchString(q) && (workAnswer(w) || workAtAnswer(rest, w)))) {
			return
		}
		subj, attr, v = "user", "job_title", w
	case askEmployerRE.MatchString(q):
		subj, attr = "user", "employer"
		v, _ = capitalized(rest, kName)
	case askHomeRE.MatchString(q):
		subj, attr = "user", "home_city"
		v = placeAnswer(rest)
	case askFromRE.MatchString(q):
		subj, attr = "user", "hometown"
		v = placeAnswer(rest)
	case askNameRE.MatchString(q):
		subj, attr = "user", "name"
		v, _ = capitalized(rest, kName)
	case askDietRE.MatchString(q):
		w := strings.Fields(rest)
		if len(w) == 0 || !diets[strings.ToLower(strings.Trim(w[0], ".,!;"))] {
			return
		}
		subj, attr, v = "user", "diet", strings.Trim(w[0], ".,!;")
	case askAgeRE.MatchString(q):
		w := strings.Fields(rest)
		if len(w) == 0 {
			return
		}
		n, err := strconv.Atoi(strings.Trim(w[0], ".,!;"))
		if err != nil || n < 1 || n > 110 {
			return
		}
		subj, attr, v = "user", "age", strconv.Itoa(n)
	default:
		m := askPetNameRE.FindStringSubmatch(q)
		if m == nil {
			return
		}
		thing := m[askPetNameRE.SubexpIndex("thing")]
		if thing == "" {
			thing = m[askPetNameRE.SubexpIndex("thing2")]
		}
		v, _ = capitalized(rest, kName)
		subj, attr = x.named(relSubject(thing), v, st), "name"
	}
	if v == "" || interjections[strings.ToLower(v)] || otherSubjectRE.MatchString(rest) {
		return
	}
	if attr != "job_title" && attr != "diet" && attr != "age" && !bareAnswer(rest, v) {
		return // "Busy, but good.": a sentence's first word, not a name
	}
	x.add(st, Fact{Subject: subj, Attribute: attr, Value: v, Type: Semantic, Confidence: 0.7, Rule: "answer",
		MessageIDs: []string{st.q.ID, st.m.ID}, Context: strings.TrimSpace(q) + " " + s})
}

// otherSubjectRE: an answer about someone or something else ("He's a
// teacher", "My sister works there") gives no value of the user's.
var otherSubjectRE = regexp.MustCompile(`(?i)^(?:he|she|they|it|that|this|there|my|our|his|her|their|your|we)\b`)

// workAnswers are what a fragment may answer "What do you do?" with
// besides a trade: a line of work ("Marketing.", "Teaching.").
var workAnswers = func() map[string]bool {
	out := set(`teaching nursing tutoring freelancing consulting accounting engineering farming coding programming
translating bookkeeping plumbing carpentry catering cleaning babysitting childcare payroll admin
administration`)
	for f := range fields {
		out[f] = true
	}
	return out
}()

// workAtAnswer: "Mostly admin at a hospital": a thing done at a place of
// work.
func workAtAnswer(rest, w string) bool {
	i := strings.Index(rest, w)
	return i >= 0 && pastimeLike(w) && !strings.HasSuffix(w, "ing") && workAtRE.MatchString(rest[i+len(w):])
}

var workAtRE = regexp.MustCompile(`^ (?:at|for) (?:a|an|the|[A-Z])`)

// workAnswer reports whether w names a line of work.
func workAnswer(w string) bool { return workAnswers[strings.ToLower(w)] }

// notAnswerNames are words a reply starts with, capitalized there, that
// name no person, place or company ("Busy, but good.").
var notAnswerNames = set(`busy same good fine great tired okay ok still mostly probably nothing lots lot with home
nowhere everywhere here there just usually sometimes trying working same-old pretty quite very super kinda`)

// bareAnswer reports whether v, read at the start of rest, is the whole
// answer: nothing after it but punctuation, fillers or a place's
// continuation ("Brooklyn, near Prospect Park"), and its first word is no
// common word capitalized for starting the sentence.
func bareAnswer(rest, v string) bool {
	first := strings.ToLower(strings.Fields(v)[0])
	if notAnswerNames[first] || npStop[first] || badStart[first] || leadWords[first] || notNameWords[first] ||
		strings.HasSuffix(first, "ly") || strings.HasSuffix(first, "ing") {
		return false
	}
	i := strings.Index(rest, v)
	if i < 0 {
		return false
	}
	after := strings.TrimSpace(rest[i+len(v):])
	after = strings.TrimLeft(after, "'s")
	if strings.HasPrefix(after, ",") || strings.HasPrefix(after, " -") {
		next := strings.Fields(strings.TrimLeft(after, ",- "))
		return len(next) == 0 || isCap(next[0]) || placeNear[strings.ToLower(next[0])]
	}
	for _, w := range strings.Fields(after) {
		if w = strings.ToLower(strings.Trim(w, ".,!;:)")); w != "" && !answerFillers[w] {
			return false
		}
	}
	return true
}

// placeNear continue a place named in an answer ("Brooklyn, near …").
var placeNear = set(`near in outside by close around just up down north south east west`)

// answerFillers may follow an answer's value ("Porto for now lol").
var answerFillers = set(`now for the moment at moment these days still currently actually lol haha mostly too right
yeah yep though tbh honestly`)

// lastSentence is the last sentence of text.
func lastSentence(text string) string {
	text = normalize(text)
	ss := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' })
	if len(ss) == 0 {
		return ""
	}
	t := ss[len(ss)-1]
	for i := len(t) - 2; i >= 0; i-- {
		if (t[i] == '.' || t[i] == '!' || t[i] == '?') && i+1 < len(t) && t[i+1] == ' ' {
			return strings.TrimSpace(t[i+1:])
		}
	}
	return strings.TrimSpace(t)
}

// interjections open a reply but name nothing ("Wow, …").
var interjections = set(`wow oh ah aw aww haha lol omg ugh hmm nope yay ooh whoa honestly actually sadly luckily oops
definitely totally not nobody none yes yeah yep no sure thanks thank hey hi hello well so`)
