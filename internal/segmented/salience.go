package segmented

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/facts"
)

// Salience: what the extractive summarizer keeps. A unit (a sentence, or a
// clause of a long sentence) scores by the key facts it carries: decisions
// and commitments, open questions, ids, numbers, dates, names and tool
// outcomes. A unit with none of them is filler, and greetings and
// acknowledgements are filler even when they carry a name. What a key fact
// is, the word lists and the weights live in internal/facts (shared with
// the search's dates and the consolidation extractor); this file keeps the
// summarizer's own forms of a unit (compact, short, core).

// longUnitWords: a sentence longer than this is split into clauses, and
// only its salient clauses are kept.
const longUnitWords = 16

// maxPieceWords bounds one kept unit, so one endless line cannot take the
// whole summary.
const maxPieceWords = 60

// maxPieceBytes bounds one kept unit in bytes (a word can be huge).
const maxPieceBytes = 480

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
	for si, s := range facts.Sentences(text) {
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
		for _, c := range facts.Clauses(s) {
			c = compact(trimFiller(c))
			if c != "" && scoreUnit(c, user, tool) >= facts.W.MinSalience {
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
		for _, f := range facts.LeadingFiller {
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

// scoreUnit returns the salience of a unit: the sum of the weights of the
// features it carries (each counted once), or 0 when it is filler.
func scoreUnit(s string, user, toolResult bool) int {
	return facts.Score(s, user, toolResult, false)
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
	if strings.HasSuffix(s, "?") || !facts.HasKeyFact(s) {
		return s
	}
	t := strings.TrimRight(s, ".!; ")
	if head, rest, ok := strings.Cut(t, ": "); ok && len(strings.Fields(head)) <= 4 && !facts.HasKeyFact(head) && facts.HasKeyFact(rest) {
		t = rest
	}
	var kept []string
	for _, c := range facts.Clauses(t) {
		for _, m := range supersededMarks {
			if i := strings.Index(strings.ToLower(c), m); i > 0 && facts.HasKeyFact(c[:i]) {
				c = c[:i]
			}
		}
		lc := strings.ToLower(c)
		if !facts.HasKeyFact(c) || ((strings.HasPrefix(lc, "not ") || strings.HasPrefix(lc, "and not ")) && len(kept) > 0) {
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
			facts.HasKeyFact("is "+strings.Join(words[i+n:min(i+n+3, len(words))], " ")) {
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
		if shortDrop[lw] && (i == 0 || !facts.IsCapitalized(w) || lw == "i") {
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
		case facts.IsCapitalized(t) && (i > 0 || (i+1 < len(words) && facts.IsCapitalized(words[i+1]))):
			key[i] = true
		case strings.HasSuffix(w, ":"):
			key[i] = true
		case facts.IsUpperID(t) || facts.IsSnake(t):
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

// supersede zeroes the score of each unit that a later unit replaces: the
// later one marks a change (facts.ChangeWords: a decision alone may add to an
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
		for _, k := range facts.KeyTokens(u.text) {
			t.values[strings.Trim(k, "-.")] = true
		}
		ts[i] = t
	}
	for j := range us {
		lower := strings.ToLower(us[j].text)
		if us[j].sent < 0 || len(ts[j].values) == 0 || !facts.ContainsAny(lower, facts.ChangeWords) {
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
	for w := range facts.ContentWords(s) {
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
