package consolidate

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/facts"
)

// Values: what a rule reads after its words must look like a value of
// the user's words — a noun phrase ("Weight Watchers coach", "a pottery
// class"), a name ("Leo", "Rio de Janeiro", "Bright Path"), an amount — or
// the rule reads nothing. A pronoun ("it", "that"), a word about the other
// speaker ("you", "your"), an adjective alone ("fulfilling") or a clause
// ("how you always…") is no value.

// kind is the shape a rule expects of its value.
type kind int

const (
	kNP    kind = iota // a noun phrase: "nurse", "green tea", "a pottery class"
	kName              // capitalized words, at most three: Ana, Mara Silva, Acme Corp
	kPlace             // capitalized words, at most four: Porto, New York, Rio de Janeiro
)

// MaxValueWords bounds a noun-phrase value.
const MaxValueWords = 6

// normalize replaces typographic quotes and apostrophes with plain ones
// and runs of white space with one space.
func normalize(s string) string {
	s = strings.NewReplacer("’", "'", "‘", "'", "“", `"`, "”", `"`, "…", "...").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// npStop ends a noun phrase: conjunctions, relative and subordinating
// words, prepositions (but "of"), auxiliaries, pronouns and time words.
var npStop = set(`and but or nor so because cause 'cause cuz since while when where which who whom whose that if
than though although until unless before after as like with without at on in into onto to from for by about over
under during through across around near towards toward against between among per via is are was were be been being
am has have had do does did will would can could should shall may might must it's that's there's here's i i'm i've
i'd i'll me we we're we've you you're he she they them it its this these those yesterday today tonight tomorrow
now then anymore already again soon later lately recently ago last next every each once twice too also either
really just even still yet ever never always sometimes usually finally instead either lol haha tho though anyway
plus btw called named earlier not more there here downtown uptown nearby locally remotely honestly tbh ngl frankly personally one two three four five six seven eight nine ten eleven twelve twenty up out off down back away over into around`)

// possessives start a new phrase inside one ("a novel my dentist
// recommended": the novel).
var possessives = set(`my our his her their your`)

// npSkip are stripped from the start of a noun phrase.
var npSkip = set(`a an the some my our`)

// badStart: a phrase starting with one of these is no value.
var badStart = set(`it this that these those them him her his hers their theirs your yours you u ur what how why
whatever something anything everything nothing someone anyone everyone somebody anybody nobody one ones lots lot
much many more most less least so such very too pretty super quite really totally all both any none not no such
other another same way kind sort bit little few several well here there stuff things thing myself yourself
up out off down back away over into around`)

// evaluative adjectives and other words that alone name no value ("it's
// fulfilling", "a really calming place" is a value, "calming" is not).
var evaluative = set(`great good amazing awesome cool nice fun fulfilling calming rewarding exciting interesting
incredible wonderful fantastic lovely beautiful hard tough difficult easy busy crazy hectic fine okay ok ready
happy sad glad proud excited tired stressed grateful thankful sure right wrong important special new old big small
huge tiny whole entire first last best worst favorite favourite real true perfect powerful inspiring inspired
emotional stressful relaxing peaceful challenging helpful supportive meaningful scary nervous worth worthwhile
sweet cute adorable gorgeous stunning brilliant fab fabulous insane wild epic unreal blessed lucky honored thrilled
overwhelmed overwhelming passionate free open able grateful`)

// np reads the noun phrase at the start of s and returns it (without a
// leading article or "my") and the offset in s where it ends; "" when s
// does not start with one.
func np(s string) (string, int) {
	var words []string
	end := 0
	i := 0
	for i < len(s) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		j := i
		for j < len(s) && s[j] != ' ' {
			j++
		}
		if i == j {
			break
		}
		w := s[i:j]
		core := strings.TrimRight(w, ".,;:!?)\"")
		stop := core != w // punctuation after the word ends the phrase
		if core == "" || strings.ContainsAny(core, "(\"") || core == "-" || core == "—" || core == "–" {
			break
		}
		lw := strings.ToLower(core)
		if isAcronym(core) {
			lw = "" // IT, UX: not the pronoun
		}
		if len(words) > 0 && (npStop[lw] || isDateWord(core) || facts.IsISODate(core) || isNumber(core) || possessives[lw]) {
			break
		}
		if len(words) == 0 && npSkip[lw] {
			i = j
			if stop {
				break
			}
			continue
		}
		if len(words) == 0 && (npStop[lw] || badStart[lw] || isDateWord(core)) {
			return "", 0
		}
		words = append(words, core)
		end = i + len(core)
		i = j
		if stop || len(words) > MaxValueWords {
			break
		}
	}
	if len(words) == 0 || len(words) > MaxValueWords {
		return "", 0
	}
	for len(words) > 0 && (isConnector(words[len(words)-1])) {
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return "", 0
	}
	v := strings.Join(words, " ")
	if !valueLike(words) {
		return "", 0
	}
	return v, end
}

// isConnector: a word a phrase may not end with ("of", "&", "-").
func isConnector(w string) bool {
	switch strings.ToLower(w) {
	case "of", "&", "-", "—", "'s", "the", "a", "an", "my", "our":
		return true
	}
	return false
}

// valueLike reports whether words can be a value: no word about the other
// speaker, not an adjective or adverb alone, not a number alone.
func valueLike(words []string) bool {
	for _, w := range words {
		lw := strings.ToLower(strings.Trim(w, "'"))
		if lw == "you" || lw == "your" || lw == "yours" || lw == "u" || lw == "ur" || lw == "ya" {
			return false
		}
	}
	if len(words) == 1 {
		lw := strings.ToLower(words[0])
		if evaluative[lw] || strings.HasSuffix(lw, "ly") || isNumber(lw) {
			return false
		}
	}
	last := strings.ToLower(words[len(words)-1])
	return !evaluative[last] || len(words) > 2
}

// placeJoins may sit inside a place or an organization's name.
var placeJoins = set(`de da do del la le of upon am on & and the von van der den y`)

// notNameWords are capitalized but no name.
var notNameWords = set(`i i'm i've i'll i'd god omg lol haha hey hi hello thanks thank wow oh yes yeah no ok okay
mom dad mum mommy daddy mama papa grandma grandpa bro sis dude man guys`)

// capitalized returns the run of capitalized words (with joins such as
// "de" inside) at the start of s, and its end offset in s.
func capitalized(s string, k kind) (string, int) {
	off := 0
	words := strings.Fields(s)
	if len(words) > 1 && words[0] == "the" && isCap(words[1]) {
		off = strings.Index(s, words[1])
		words = words[1:] // the Netherlands, the US
	}
	var out []string
	end := 0
	pos := off
	for i, w := range words {
		at := strings.Index(s[pos:], w) + pos
		pos = at + len(w)
		t := strings.TrimRight(w, ".,;:!?)\"'")
		stop := t != w
		if stop && w == t+"." && abbrevTitles[strings.ToLower(t)] && i+1 < len(words) && isCap(words[i+1]) {
			t, stop = w, false // "St. Mary's"
		}
		if strings.HasSuffix(t, "'s") && !stop && i+1 < len(words) && !isCap(words[i+1]) && !ageWord(words[i+1]) && !npStop[strings.ToLower(words[i+1])] {
			return "", 0 // "Sarah's party": something of Sarah's, not Sarah
		}
		t = strings.TrimSuffix(t, "'s")
		switch {
		case isCap(t) && !notNameWords[strings.ToLower(t)] && !isDateWord(t) && !strings.ContainsAny(t, "\"("):
			out = append(out, t)
			end = at + len(t)
		case len(out) > 0 && placeJoins[strings.ToLower(t)] && !stop && i+1 < len(words) && isCap(words[i+1]) && !isDateWord(strings.Trim(words[i+1], ".,;:!?")):
			out = append(out, t)
		default:
			stop = true
		}
		if stop {
			break
		}
	}
	for len(out) > 0 && placeJoins[strings.ToLower(out[len(out)-1])] {
		out = out[:len(out)-1]
	}
	limit := 4
	if k == kName {
		limit = 3
	}
	if len(out) == 0 || len(out) > limit {
		return "", 0
	}
	return strings.Join(out, " "), end
}

// abbrevTitles are words of a name written with a period ("St. Mary's").
var abbrevTitles = set(`st mt dr ft`)

// value reads a value of kind k at the start of s.
func value(s string, k kind) (string, int) {
	s = strings.TrimLeft(s, " ")
	lead := 0
	if k == kNP {
		return np(s)
	}
	v, end := capitalized(s, k)
	return v, end + lead
}

func isAcronym(w string) bool {
	return len(w) >= 2 && strings.ToUpper(w) == w && strings.ToLower(w) != w
}

func isCap(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}

func isDateWord(w string) bool {
	lw := strings.ToLower(strings.TrimRight(w, "."))
	if _, ok := weekdays[lw]; ok && len(lw) > 3 {
		return true
	}
	if _, ok := months[lw]; ok && lw != "may" && lw != "march" && len(lw) > 3 {
		return true
	}
	return w == "May" || w == "March"
}

func isNumber(w string) bool {
	return w != "" && strings.Trim(w, "0123456789.,:") == ""
}

// splitList splits a list value ("peanuts, shellfish and kiwi") into its
// items, each a noun phrase; it stops at an item that is not one.
func splitList(s string) []string {
	if loc := listEndRE.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	// "a, b and c" is a list; "a, by the way" is one item and an aside.
	if i := strings.IndexByte(s, ','); i >= 0 && !andOrRE.MatchString(s[i:]) {
		if adjectiveCut(s[:i], s[i+1:]) {
			return nil // "creating a safe, inviting place": the comma parts two adjectives
		}
		s = s[:i]
	}
	var out []string
	for _, p := range listSepRE.Split(s, -1) {
		v, end := np(p)
		if v == "" || strings.TrimSpace(p[end:]) != "" && len(out) > 0 {
			break
		}
		out = append(out, v)
		if strings.TrimSpace(p[end:]) != "" || len(out) == 5 {
			break // "dairy and I don't like …": a new clause, not an item
		}
	}
	return out
}

// topic returns up to two content words of v (no dates, numbers or
// names after the first word) as a key segment: "ship the release on
// Friday" → "ship_release".
func topic(v string) string { return topicOf(v, false) }

// topicOf is topic, keeping names when names is set ("reply in English" →
// "reply_english").
func topicOf(v string, names bool) string {
	var out []string
	for i, w := range strings.Fields(v) {
		t := strings.Trim(w, ".,;:!?\"'")
		lw := strings.ToLower(t)
		r, _ := utf8.DecodeRuneInString(t)
		if t == "" || strings.ContainsFunc(t, unicode.IsDigit) || isDateWord(t) || (i > 0 && unicode.IsUpper(r) && !names) ||
			stopWords[lw] {
			continue
		}
		out = append(out, lw)
		if len(out) == 2 {
			break
		}
	}
	if len(out) == 0 {
		return ""
	}
	return slug(strings.Join(out, " "))
}

// headSlug is the key segment of a noun phrase: its last two words
// ("a pottery class" → "pottery_class").
func headSlug(v string) string {
	w := strings.Fields(strings.ToLower(v))
	var keep []string
	for _, x := range w {
		if !stopWords[x] && !evaluative[x] {
			keep = append(keep, x)
		}
	}
	if len(keep) == 0 {
		keep = w
	}
	if len(keep) > 2 {
		keep = keep[len(keep)-2:]
	}
	return slug(strings.Join(keep, " "))
}

var stopWords = set(`the a an on in at by to for of with it we our my and or is be this that next until from
before after instead then just all his her their its new first`)

func set(words string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(words) {
		out[w] = true
	}
	return out
}

// Patterns used above, compiled once.
var (
	listEndRE = regexp.MustCompile(`[.;:!?()]`)
	andOrRE   = regexp.MustCompile(`(?i)\s(?:and|or)\s`)
	listSepRE = regexp.MustCompile(`,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+`)
)

// ageWord: a number after "Leo's" makes it "Leo is" ("Leo's 7").
func ageWord(w string) bool {
	w = strings.ToLower(strings.Trim(w, ".,!;"))
	return isNumber(w) || numberWordSet[w]
}

var numberWordSet = set(strings.ReplaceAll(numberWords, "|", " "))

// adjectiveCut reports whether a comma between before and after parts
// two adjectives of one noun phrase ("a safe, inviting place"): before
// ends in an article and one word, and after goes on in lower case.
func adjectiveCut(before, after string) bool {
	bw, aw := strings.Fields(before), strings.Fields(after)
	if len(bw) < 2 || len(aw) < 2 {
		return false
	}
	art := strings.ToLower(bw[len(bw)-2])
	next := aw[0]
	return (art == "a" || art == "an" || art == "the" || art == "such") && next == strings.ToLower(next) && !npStop[next] && !andOrRE.MatchString(", "+next)
}
