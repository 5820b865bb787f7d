package segmented

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Salience: what the extractive summarizer keeps. A unit (a sentence, or a
// clause of a long sentence) scores by the key facts it carries: decisions
// and commitments, open questions, ids, numbers, dates, names and tool
// outcomes. A unit with none of them is filler, and greetings and
// acknowledgements are filler even when they carry a name.

// Feature weights of scoreUnit.
const (
	wDecision = 30 // decided, agreed, will, must, deadline, ... with a key fact
	// wDecisionBare: a decision word in a unit without an id, number, name
	// or date ("we'll keep it simple", "so agree on the terms first") is
	// mostly advice or a promise to listen: below minSalience alone.
	wDecisionBare = 8
	wQuestion     = 20 // ends with "?"
	wUserAsks     = 10 // ... asked by the user, about an id, number, name or date
	wID           = 25 // INV-4471, T-100, #123, a1b2c3, v2.3.1
	wNumber       = 15 // 42, 12.50, 30%
	wDate         = 15 // March 14, Friday, 2024-05-01, 10:30, tomorrow, Q3
	wName         = 15 // a capitalized word inside the sentence
	wToolResult   = 10 // a unit of a tool result
	wOutcome      = 10 // error, failed, ok, status, returned, ... (tool results)
	wToolCall     = 12 // "called sql(...)"
	wUser         = 3  // any user unit, a little ahead of the rest
	// minSalience: units scoring less are filler and dropped even when
	// there is room.
	minSalience = 10
)

// longUnitWords: a sentence longer than this is split into clauses, and
// only its salient clauses are kept.
const longUnitWords = 16

// maxPieceWords bounds one kept unit, so one endless line cannot take the
// whole summary.
const maxPieceWords = 60

// maxPieceBytes bounds one kept unit in bytes (a word can be huge).
const maxPieceBytes = 480

var decisionWords = []string{
	"decide", "decided", "decides", "decision", "agree", "agreed", "agrees", "chose", "choose", "chosen",
	"will", "won't", "we'll", "i'll", "let's", "going to", "plan", "planned", "must", "need to", "have to",
	"confirm", "confirmed", "approve", "approved", "settled", "final", "resolved", "conclusion",
	"commit", "committed", "promise", "promised", "deadline", "due on", "due by", "is due", "assign", "assigned", "schedule", "scheduled",
	"switch to", "go with", "going with", "cancel", "cancelled", "canceled", "reject", "rejected", "accept", "accepted",
}

var outcomeWords = []string{
	"error", "errors", "failed", "fails", "failure", "success", "succeeded", "ok", "status", "returned",
	"found", "not found", "rows", "total", "result", "results", "timeout", "denied", "created", "updated", "deleted",
	"not exist", "missing", "invalid", "exception", "refused", "unauthorized", "forbidden", "conflict", "warning",
}

// smallTalk marks a unit as small talk unless it carries an id, a number
// or a decision.
var smallTalk = []string{"how are you", "how's it going", "how is it going", "nice to meet", "weather", "weekend", "hope you're well", "hope you are well"}

// ackPhrases mark an acknowledgement: filler unless the unit carries an
// id, a number, a name or a date.
var ackPhrases = []string{
	"noted", "got it", "keep that in mind", "keep it in mind", "bear that in mind", "written that down",
	"write that down", "made a note", "make a note", "letting me know", "for the update", "will do",
	"makes sense", "sounds good", "understood", "recorded", "good to know",
}

// greetingStarts begin a unit that is a greeting or thanks: filler unless
// it carries an id, a number or a decision.
var greetingStarts = []string{"thanks", "thank you", "hi", "hello", "hey", "good morning", "good afternoon", "good evening", "dear", "cheers"}

var monthWords = []string{
	"january", "february", "march", "april", "june", "july", "august", "september", "october",
	"november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
	"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
	"today", "tomorrow", "yesterday", "tonight", "next week", "next month", "last week", "eod", "eow",
}

// fillerWords make up greetings, acknowledgements and pleasantries: a unit
// of nothing but these (and punctuation, and a name) is filler.
var fillerWords = map[string]bool{
	"hi": true, "hello": true, "hey": true, "thanks": true, "thank": true, "you": true, "so": true, "much": true,
	"ok": true, "okay": true, "sure": true, "great": true, "good": true, "morning": true, "afternoon": true,
	"evening": true, "cool": true, "awesome": true, "perfect": true, "nice": true, "fine": true, "yes": true,
	"yeah": true, "yep": true, "no": true, "problem": true, "worries": true, "welcome": true, "you're": true,
	"glad": true, "happy": true, "to": true, "help": true, "of": true, "course": true, "sounds": true,
	"got": true, "it": true, "i": true, "see": true, "understood": true, "alright": true, "right": true,
	"a": true, "lot": true, "again": true, "there": true, "all": true, "the": true, "best": true, "cheers": true,
	"bye": true, "talk": true, "soon": true, "later": true, "hope": true, "this": true, "helps": true,
	"let": true, "me": true, "know": true, "if": true, "anything": true, "else": true, "how": true, "are": true,
	"doing": true, "well": true, "am": true, "i'm": true, "can": true, "with": true, "that": true, "that's": true,
	"absolutely": true, "definitely": true, "wonderful": true, "excellent": true, "appreciate": true, "and": true,
	"for": true, "your": true, "question": true, "asking": true, "makes": true, "sense": true, "indeed": true,
	"exactly": true, "totally": true, "really": true, "very": true, "too": true, "one": true,
}

// leadingFiller are discourse markers stripped from the start of a unit.
var leadingFiller = []string{
	"well, ", "so, ", "okay, ", "ok, ", "sure, ", "great, ", "thanks, ", "honestly, ", "basically, ",
	"actually, ", "alright, ", "right, ", "yes, ", "yeah, ", "also, ", "anyway, ", "now, ", "hmm, ",
}

// unit is one candidate piece of a summary.
type unit struct {
	group int    // the message (Summarize) or summary line (Condense) it comes from
	sent  int    // the sentence it belongs to, within the group
	text  string // as kept
	// short is the unit's key facts in telegraphic form (see shortForm),
	// kept when text does not fit; core only its key facts (coreForm),
	// kept when short does not fit either. "" when it is the longer form.
	short, core string
	score       int
}

// shorter returns the unit's short form, or its text.
func (u unit) shorter() string {
	if u.short != "" {
		return u.short
	}
	return u.text
}

// newUnit returns the unit of sentence sent kept as text, scored.
func newUnit(sent int, text string, user, tool bool) unit {
	u := unit{sent: sent, text: text, score: scoreUnit(text, user, tool)}
	if sh := shortForm(text); sh != text {
		u.short = sh
	}
	u.core = coreForm(u.shorter())
	return u
}

// scoredUnits splits text into scored units: its sentences, each stripped
// of leading discourse markers and clipped. A long sentence is trimmed to
// its salient clauses: clauses without a key fact are dropped, and each run
// of adjacent salient clauses stays together as one unit (so a decision
// keeps the clause naming what was decided). The units of sentence i have
// sent == i.
func scoredUnits(text string, user, tool bool) []unit {
	var out []unit
	for si, s := range splitSentences(text) {
		if len(strings.Fields(s)) <= longUnitWords {
			out = append(out, newUnit(si, clipWords(compact(trimFiller(s)), maxPieceWords), user, tool))
			continue
		}
		var run []string
		n := len(out)
		flush := func() {
			if len(run) > 0 {
				out = append(out, newUnit(si, clipWords(strings.Join(run, ", "), maxPieceWords), user, tool))
				run = nil
			}
		}
		for _, c := range splitClauses(s) {
			c = compact(trimFiller(c))
			if c != "" && scoreUnit(c, user, tool) >= minSalience {
				run = append(run, c)
				continue
			}
			flush()
		}
		flush()
		if len(out) == n { // no salient clause: the sentence, as filler
			out = append(out, newUnit(si, clipWords(compact(trimFiller(s)), maxPieceWords), user, tool))
		}
	}
	return out
}

// dropWords are left out of a kept unit (headline style): articles and
// intensifiers carry no fact and cost tokens.
var dropWords = map[string]bool{
	"the": true, "a": true, "an": true, "just": true, "really": true, "very": true, "quite": true,
	"actually": true, "basically": true, "simply": true, "probably": true, "definitely": true,
	"currently": true, "totally": true, "literally": true,
}

// dropPhrases are cut from a kept unit.
var dropPhrases = []string{"i think ", "i believe ", "it looks like ", "it seems that ", "it seems ", "as far as i know, ", "to be honest, ", "in order "}

// compact returns s in headline style: without dropWords and dropPhrases,
// its first letter kept as it was. Units of four words or fewer are kept
// as they are.
func compact(s string) string {
	if len(strings.Fields(s)) <= 4 {
		return s
	}
	for _, p := range dropPhrases {
		for {
			i := strings.Index(strings.ToLower(s), p)
			if i < 0 || (i > 0 && s[i-1] != ' ') {
				break
			}
			s = s[:i] + s[i+len(p):]
		}
	}
	words := strings.Fields(s)
	out := words[:0]
	for _, w := range words {
		if dropWords[strings.ToLower(w)] {
			continue
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return s
	}
	r := strings.Join(out, " ")
	if f, _ := utf8.DecodeRuneInString(s); unicode.IsUpper(f) {
		if g, n := utf8.DecodeRuneInString(r); unicode.IsLower(g) {
			r = string(unicode.ToUpper(g)) + r[n:]
		}
	}
	return r
}

func trimFiller(s string) string {
	for changed := true; changed; {
		changed = false
		lower := strings.ToLower(s)
		for _, f := range leadingFiller {
			if strings.HasPrefix(lower, f) && len(s) > len(f) {
				s = strings.TrimSpace(s[len(f):])
				if r, n := utf8.DecodeRuneInString(s); n > 0 && unicode.IsLower(r) && !strings.HasPrefix(s, "i ") {
					s = string(unicode.ToUpper(r)) + s[n:]
				}
				changed = true
				break
			}
		}
	}
	return s
}

// splitClauses splits a long sentence at , ; : and dashes (keeping numbers
// such as 1,200 or 10:30 whole).
func splitClauses(s string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if c := strings.TrimSpace(s[start:end]); c != "" {
			out = append(out, strings.TrimRight(c, ",;:"))
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case (c == ',' || c == ';' || c == ':') && i+1 < len(s) && s[i+1] == ' ':
			flush(i + 1)
			start = i + 1
		case strings.HasPrefix(s[i:], " - ") || strings.HasPrefix(s[i:], " — "):
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return out
}

// scoreUnit returns the salience of a unit: the sum of the weights of the
// features it carries (each counted once), or 0 when it is filler.
func scoreUnit(s string, user, toolResult bool) int {
	return scoreUnitAs(s, user, toolResult, false)
}

// scoreUnitAs is scoreUnit for a unit whose question, if it is one, was
// answered (a reply follows it in the span): an answered question is
// context, no longer open, and weighs half.
func scoreUnitAs(s string, user, toolResult, answered bool) int {
	if isFiller(s) {
		return 0
	}
	lower := strings.ToLower(s)
	score := 0
	f, date, fact := factsOf(s, lower)
	decision := containsAny(lower, decisionWords)
	switch {
	case decision && fact:
		score += wDecision
	case decision:
		score += wDecisionBare // "we will keep it simple", "so agree on it first"
	}
	if !decision && f.ids == 0 && f.nums == 0 && (startsWithAny(lower, greetingStarts) || containsAny(lower, smallTalk)) {
		return 0
	}
	if !fact && containsAny(lower, ackPhrases) {
		return 0 // "Got it, I'll keep that in mind."
	}
	if strings.HasSuffix(strings.TrimRight(s, "\"') "), "?") {
		switch {
		case !user:
			if fact {
				score += wQuestion / 2 // "anything else?" is not a question worth keeping
			}
		case answered:
			score += wQuestion / 2
		case fact:
			score += wQuestion + wUserAsks
		default:
			score += wQuestion
		}
	}
	// Each id, number and name is a fact of its own: the first of a kind
	// counts in full, up to two more a third each.
	more := func(n, w int) int {
		if n == 0 {
			return 0
		}
		return w + min(n-1, 2)*w/3
	}
	score += more(f.ids, wID) + more(f.nums, wNumber) + more(f.names, wName)
	if date {
		score += wDate
	}
	if toolResult {
		outcome := containsAny(lower, outcomeWords)
		if score > 0 || outcome {
			score += wToolResult
		}
		if outcome {
			score += wOutcome
		}
	}
	if score == 0 {
		return 0
	}
	if user {
		score += wUser
	}
	return score
}

// isFiller reports a unit made only of greeting and acknowledgement words
// (and names: "Thanks, Alice!" is filler).
func isFiller(s string) bool {
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	if len(words) == 0 {
		return !strings.ContainsFunc(s, unicode.IsDigit)
	}
	if strings.ContainsFunc(s, unicode.IsDigit) {
		return false
	}
	for i, w := range words {
		if fillerWords[strings.ToLower(w)] {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(w); i > 0 && unicode.IsUpper(r) {
			continue // a name
		}
		return false
	}
	return true
}

func startsWithAny(lower string, words []string) bool {
	for _, w := range words {
		if strings.HasPrefix(lower, w) && containsWord(lower[:len(w)+min(1, len(lower)-len(w))], w) {
			return true
		}
	}
	return false
}

func containsAny(lower string, words []string) bool {
	for _, w := range words {
		if containsWord(lower, w) {
			return true
		}
	}
	return false
}

// hasMay: "May" as a month (capitalized, not starting the sentence, or
// followed by a number).
func hasMay(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "May ")
		if j < 0 {
			return false
		}
		j += i
		rest := s[j+4:]
		if j > 0 || (rest != "" && rest[0] >= '0' && rest[0] <= '9') {
			return true
		}
		i = j + 1
	}
}

// unitFacts counts the key facts of a unit's words.
type unitFacts struct {
	ids   int  // INV-4471, T-100, #123, a1b2, v2.3.1; API-GATEWAY, audit_logs
	nums  int  // 42, 12.50, 324,500, 30%
	names int  // distinct capitalized words inside the unit (not months or days)
	date  bool // an ISO date, a time of day, or a number beside a month
}

// keyFacts counts the ids, numbers and names of s, and whether it holds a
// date. Numbers that are part of a date (the day and year beside a month,
// 2025-04-15, 09:53) count as the date, not as numbers.
func keyFacts(s string) unitFacts {
	var f unitFacts
	words := strings.Fields(s)
	month := make([]bool, len(words))
	for i, w := range words {
		lw := strings.ToLower(strings.Trim(w, ".,;:!?()[]{}\"'`"))
		month[i] = slices.Contains(monthWords, lw) || w == "May"
	}
	nearMonth := func(i int) bool {
		return (i > 0 && month[i-1]) || (i+1 < len(words) && month[i+1]) || (i > 1 && month[i-2])
	}
	names := map[string]bool{}
	for i, raw := range words {
		w := strings.Trim(raw, ".,;:!?()[]{}\"'`")
		if w == "" {
			continue
		}
		var letters, digits, joins, colons int
		for _, r := range w {
			switch {
			case unicode.IsLetter(r):
				letters++
			case unicode.IsDigit(r):
				digits++
			case r == '-' || r == '_' || r == '#' || r == '/':
				joins++
			case r == ':':
				colons++
			}
		}
		switch {
		case digits == 0:
			if joins > 0 && letters > 0 && (isUpperID(w) || isSnake(w)) {
				f.ids++ // API-GATEWAY, ACME_PROD, audit_logs
				continue
			}
			if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) && i > 0 && w != "I" && !strings.HasPrefix(w, "I'") && !month[i] {
				if p := words[i-1]; !strings.HasSuffix(p, ".") && !strings.HasSuffix(p, ":") {
					names[strings.ToLower(w)] = true
				}
			}
		case letters == 0 && (isISODate(w) || (colons == 1 && digits <= 4)):
			f.date = true // 2025-04-15, 09:53
		case letters == 0 && nearMonth(i) && len(w) <= 4:
			f.date = true // 3 March 2025
		case strings.HasPrefix(w, "#") || (letters > 0 && !isUnitSuffix(w)):
			f.ids++
		default:
			f.nums++
		}
	}
	f.names = len(names)
	return f
}

// isISODate: 2025-04-15.
func isISODate(w string) bool {
	if len(w) != 10 || w[4] != '-' || w[7] != '-' {
		return false
	}
	for i, r := range w {
		if i != 4 && i != 7 && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// isUpperID: an all-capitals token joined by - or _ (PROJ-X, US_EAST).
func isUpperID(w string) bool {
	upper := 0
	for _, r := range w {
		if unicode.IsLower(r) {
			return false
		}
		if unicode.IsUpper(r) {
			upper++
		}
	}
	return upper >= 2
}

// isSnake: letters joined by underscores (audit_logs, get_invoice).
func isSnake(w string) bool {
	i := strings.IndexByte(w, '_')
	return i > 0 && i < len(w)-1 && !strings.ContainsFunc(w, func(r rune) bool {
		return !unicode.IsLetter(r) && r != '_'
	})
}

// isUnitSuffix: a number with a unit (10k, 5ms, 3x, 2nd, 12pm, 40GB) is a
// number, not an id.
func isUnitSuffix(w string) bool {
	i := strings.IndexFunc(w, unicode.IsLetter)
	if i <= 0 || strings.ContainsFunc(w[:i], unicode.IsLetter) {
		return false
	}
	switch strings.ToLower(w[i:]) {
	case "k", "m", "b", "ms", "s", "h", "x", "st", "nd", "rd", "th", "am", "pm", "kb", "mb", "gb", "tb",
		"min", "mins", "hrs", "km", "kg", "g", "eur", "usd", "d", "w", "y", "yr", "yrs", "px", "pt":
		return true
	}
	return false
}

// containsWord reports whether w occurs in s delimited by non-letters.
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before, _ := utf8.DecodeLastRuneInString(s[:j])
		after, _ := utf8.DecodeRuneInString(s[j+len(w):])
		if (j == 0 || !unicode.IsLetter(before)) && (j+len(w) == len(s) || !unicode.IsLetter(after)) {
			return true
		}
		i = j + 1
	}
}

// contentWords returns the lower-cased words of s longer than two letters,
// for near-duplicate detection.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '.'
	}) {
		w = strings.Trim(w, "-.")
		if len(w) > 2 || strings.ContainsFunc(w, unicode.IsDigit) {
			out[w] = true
		}
	}
	return out
}

// keyTokens returns the tokens of s that carry facts: words with digits
// and capitalized words inside it (lower-cased, trimmed).
func keyTokens(s string) []string {
	var out []string
	for i, w := range strings.Fields(s) {
		w = strings.Trim(w, ".,;:!?()[]{}\"'`")
		r, _ := utf8.DecodeRuneInString(w)
		if strings.ContainsFunc(w, unicode.IsDigit) || (i > 0 && unicode.IsUpper(r) && w != "I") {
			out = append(out, strings.ToLower(w))
		}
	}
	return out
}

// redundant reports whether a unit with content words a and key tokens
// keys adds nothing to one already kept (content words b): its key tokens
// are all in b and at least 70 % of its words are.
func redundant(a map[string]bool, keys []string, b map[string]bool) bool {
	if in := shared(a, b); in*10 < len(a)*7 {
		return false
	}
	for _, k := range keys {
		if !b[strings.Trim(k, "-.")] {
			return false
		}
	}
	return true
}

// subsumed reports whether every content word of a is in b.
func subsumed(a, b map[string]bool) bool {
	if len(a) == 0 {
		return true
	}
	for w := range a {
		if !b[w] {
			return false
		}
	}
	return true
}

// splitSentences splits text into trimmed sentences at ., ?, ! followed by
// a space, and at line breaks.
func splitSentences(text string) []string {
	var out []string
	flush := func(s string) {
		s = strings.TrimSpace(s)
		s = strings.TrimLeft(s, "-*• ")
		if s != "" {
			out = append(out, s)
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			flush(text[start:i])
			start = i + 1
		case (c == '.' || c == '?' || c == '!') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n'):
			flush(text[start : i+1])
			start = i + 1
		}
	}
	flush(text[start:])
	return out
}

func clipWords(s string, n int) string {
	words := strings.Fields(s)
	var out string
	if len(words) > n {
		out = strings.Join(words[:n], " ") + " …"
	} else {
		out = strings.Join(words, " ")
	}
	if len(out) > maxPieceBytes {
		out = truncate(out, maxPieceBytes)
	}
	return out
}

// lineShape returns the shape of a line of a tool result: digit runs as
// "0", letter runs as "a", other characters kept. Lines of one shape are
// rows of data (a table, a list, a log).
func lineShape(s string) string {
	var b strings.Builder
	last := rune(0)
	for _, r := range s {
		switch {
		case unicode.IsDigit(r):
			r = '0'
		case unicode.IsLetter(r):
			r = 'a'
		case unicode.IsSpace(r):
			r = ' '
		}
		if r != last || (r != '0' && r != 'a' && r != ' ') {
			b.WriteRune(r)
		}
		last = r
	}
	return b.String()
}

// shortDrop are the words a unit's short form leaves out: pronouns,
// possessives, auxiliaries and politeness, which carry no key fact.
var shortDrop = map[string]bool{
	"i": true, "we": true, "you": true, "they": true, "he": true, "she": true, "it": true, "me": true, "us": true,
	"them": true, "my": true, "our": true, "your": true, "their": true, "his": true, "her": true, "its": true,
	"is": true, "are": true, "was": true, "were": true, "be": true, "been": true, "being": true, "am": true,
	"has": true, "have": true, "had": true, "that": true, "please": true, "also": true, "so": true,
	"i'm": true, "we're": true, "it's": true, "i've": true, "we've": true, "there": true, "here": true,
	"still": true, "again": true, "then": true, "as": true,
}

// copulas become ": " in a short form when a key fact follows them
// ("lead is Ada Lovelace" → "lead: Ada Lovelace").
var copulas = map[string]bool{"is": true, "are": true, "was": true, "were": true}

// supersededMarks start the part of a clause that names a value being
// replaced ("Stripe instead of Adyen", "by May 3, not May 1").
var supersededMarks = []string{" instead of ", " rather than ", " in place of "}

// shortForm returns the telegraphic form of a prose unit, for a summary
// too tight for the unit's text: a leading label without a key fact ("For
// the record:") and the clauses without one are left out (when another
// clause has one), as is a value being replaced ("instead of X", "not X"),
// and pronouns, auxiliaries and politeness; a copula before a key fact
// becomes ": " ("budget is 42k" → "budget: 42k"). Questions and units
// without a key fact are returned as they are.
func shortForm(s string) string {
	if strings.HasSuffix(s, "?") || !hasKeyFact(s) {
		return s
	}
	t := strings.TrimRight(s, ".!; ")
	if head, rest, ok := strings.Cut(t, ": "); ok && len(strings.Fields(head)) <= 4 && !hasKeyFact(head) && hasKeyFact(rest) {
		t = rest
	}
	var kept []string
	for _, c := range splitClauses(t) {
		for _, m := range supersededMarks {
			if i := strings.Index(strings.ToLower(c), m); i > 0 && hasKeyFact(c[:i]) {
				c = c[:i]
			}
		}
		lc := strings.ToLower(c)
		if !hasKeyFact(c) || ((strings.HasPrefix(lc, "not ") || strings.HasPrefix(lc, "and not ")) && len(kept) > 0) {
			continue
		}
		kept = append(kept, telegraphic(c))
	}
	out := strings.Join(kept, ", ")
	if len(strings.Fields(out)) < 2 || len(out) >= len(s) {
		return s
	}
	return out
}

// telegraphic drops shortDrop words from a clause and turns the first
// copula ("is", "will be", "is now") before a key fact into ": "; "has to
// be" goes, "has to" becomes "must". Words of a name (capitalized inside
// the clause) are kept.
func telegraphic(c string) string {
	words := strings.Fields(c)
	out := make([]string, 0, len(words))
	colon := false
	lower := func(i int) string {
		if i < len(words) {
			return strings.ToLower(words[i])
		}
		return ""
	}
	for i := 0; i < len(words); i++ {
		w, lw := words[i], lower(i)
		n := 0 // words of a copula at i
		switch {
		case copulas[lw]:
			n = 1
		case lw == "will" && lower(i+1) == "be":
			n = 2
		}
		if n > 0 && (lower(i+n) == "now" || lower(i+n) == "still") {
			n++
		}
		if n > 0 && !colon && len(out) > 0 && !strings.HasSuffix(out[len(out)-1], ":") &&
			hasKeyFact("is "+strings.Join(words[i+n:min(i+n+3, len(words))], " ")) {
			out[len(out)-1] += ":"
			colon = true
			i += n - 1
			continue
		}
		if (lw == "has" || lw == "have" || lw == "had") && lower(i+1) == "to" {
			if lower(i+2) == "be" {
				i += 2
				continue
			}
			out = append(out, "must")
			i++
			continue
		}
		if shortDrop[lw] && (i == 0 || !isCapitalized(w) || lw == "i") {
			continue
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return c
	}
	return strings.Join(out, " ")
}

// coreStop are the words coreForm does not keep as the context of a key
// fact.
var coreStop = map[string]bool{
	"for": true, "of": true, "on": true, "in": true, "at": true, "to": true, "by": true, "the": true, "a": true,
	"an": true, "and": true, "or": true, "with": true, "from": true, "as": true, "into": true, "about": true,
	"after": true, "before": true, "once": true, "until": true, "since": true, "than": true, "per": true,
}

// coreForm returns the key facts of a short form, for a limit too tight
// for it: its key-fact words (ids, numbers and the word after one, dates,
// names, a label ending in ":"), each run of them after the nearest word
// before it that is not a preposition or pronoun. "" when it would not be
// shorter.
func coreForm(s string) string {
	if strings.HasSuffix(s, "?") {
		return ""
	}
	words := strings.Fields(strings.TrimRight(s, ".!;, "))
	key := make([]bool, len(words))
	any := false
	for i, w := range words {
		t := strings.Trim(w, ".,;:!?()[]{}\"'`")
		switch {
		case t == "":
		case strings.ContainsFunc(t, unicode.IsDigit):
			key[i] = true
			if i+1 < len(words) && !coreStop[strings.ToLower(words[i+1])] && !shortDrop[strings.ToLower(words[i+1])] {
				key[i+1] = true
			}
		case isCapitalized(t) && (i > 0 || (i+1 < len(words) && isCapitalized(words[i+1]))):
			key[i] = true
		case strings.HasSuffix(w, ":"):
			key[i] = true
		case isUpperID(t) || isSnake(t):
			key[i] = true
		}
		if key[i] && !strings.HasSuffix(w, ":") {
			any = true
		}
	}
	if !any {
		return ""
	}
	var out []string
	for i, w := range words {
		if !key[i] {
			continue
		}
		if i > 0 && !key[i-1] {
			for j := i - 1; j >= 0 && !key[j]; j-- {
				lw := strings.ToLower(words[j])
				if !coreStop[lw] && !shortDrop[lw] {
					out = append(out, words[j])
					break
				}
			}
		}
		out = append(out, w)
	}
	r := strings.Join(out, " ")
	if len(r) >= len(strings.Join(words, " ")) {
		return ""
	}
	return r
}

func isCapitalized(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}

// hasKeyFact reports whether s carries an id, a number, a name or a date
// (see keyFacts; a name is a capitalized word not starting s).
func hasKeyFact(s string) bool {
	_, _, fact := factsOf(s, strings.ToLower(s))
	return fact
}

// factsOf returns keyFacts(s), whether s names a date (a date, a month, or
// "May" as one) and whether it carries any key fact; lower is s lower-cased.
func factsOf(s, lower string) (f unitFacts, date, fact bool) {
	f = keyFacts(s)
	date = f.date || containsAny(lower, monthWords) || hasMay(s)
	return f, date, f.ids+f.nums+f.names > 0 || date
}

// changeWords mark a unit that may replace an earlier statement: a
// decision or a correction.
var changeWords = []string{
	"actually", "now", "instead", "changed", "change", "update", "updated", "moved", "no longer", "not",
	"correction", "corrected", "new", "switch", "switched", "taking over", "takes over", "rather",
}

// supersede zeroes the score of each unit that a later unit replaces: the
// later one marks a change (changeWords: a decision alone may add to an
// earlier one rather than replace it), and both state a
// value (a number, an id or a name) on one topic, the later holding at
// least 60 % (and two) of the earlier's words other than numbers and ids,
// with a value the earlier lacks. "Budget for Orion is 42k" gives way to
// "Actually, the Orion budget is now 50k": a summary keeps the newest
// value, not the one it replaced. Tool calls (sent < 0) are left alone.
func supersede(us []unit) {
	type topic struct {
		words  map[string]bool // content words, names included, not values
		values map[string]bool // key tokens with a digit, and names
	}
	ts := make([]topic, len(us))
	for i, u := range us {
		t := topic{words: topicWords(u.text), values: map[string]bool{}}
		for _, k := range keyTokens(u.text) {
			t.values[strings.Trim(k, "-.")] = true
		}
		ts[i] = t
	}
	for j := range us {
		lower := strings.ToLower(us[j].text)
		if us[j].sent < 0 || len(ts[j].values) == 0 || !containsAny(lower, changeWords) {
			continue
		}
		for i := range j {
			if us[i].sent < 0 || us[i].score == 0 || len(ts[i].values) == 0 || (us[i].group == us[j].group && us[i].sent == us[j].sent) {
				continue
			}
			if n := shared(ts[i].words, ts[j].words); n < 2 || n*10 < len(ts[i].words)*6 {
				continue
			}
			newValue := false
			for v := range ts[j].values {
				if !ts[i].values[v] {
					newValue = true
					break
				}
			}
			lost := false
			for v := range ts[i].values {
				if !ts[j].values[v] {
					lost = true
					break
				}
			}
			if newValue && lost {
				us[i].score = 0
			}
		}
	}
}

// topicWords returns the content words of s without numbers, ids and
// function words: what a statement is about, not the value it states.
func topicWords(s string) map[string]bool {
	out := map[string]bool{}
	for w := range contentWords(s) {
		if !strings.ContainsFunc(w, unicode.IsDigit) && !coreStop[w] && !shortDrop[w] {
			out[w] = true
		}
	}
	return out
}

// sameTopic reports whether topic words a are (at least three, and 80 %
// of them) in b: the same kind of statement, with other values.
func sameTopic(a, b map[string]bool) bool {
	in := shared(a, b)
	return in >= 3 && in*10 >= len(a)*8
}

// shared counts the words of a that are in b.
func shared(a, b map[string]bool) int {
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}
