package membench

import (
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Dialogue is a multi-session conversation between two people read from a
// data set (a public one such as LoCoMo, or the held-out set), with its
// questions. Speaker 0 plays the user, speaker 1 the agent: agentmem
// stores the first one's turns as user messages and the second one's as
// assistant messages, each content prefixed with the speaker's name
// ("Noor: …"), so both are named in every rendering of the context
// (the recalled section and the memory section show content, not the
// message's name field).
type Dialogue struct {
	// Name identifies the conversation in the tables (the file name).
	Name     string
	Speakers [2]string
	Sittings []DialogueSitting
	// Questions are asked after the last sitting.
	Questions []DialogueQuestion
}

// DialogueSitting is one sitting: a session of its own in the cross-session
// mode.
type DialogueSitting struct {
	// UnixNano is when the sitting began (UTC); its turns are said a
	// minute apart from then.
	UnixNano int64
	Turns    []DialogueTurn
	// Events are what each speaker did in the sitting, as the data set's
	// annotators wrote them (nil when it has none).
	Events [2][]string
}

// DialogueTurn is one turn of a sitting.
type DialogueTurn struct {
	// ID is the data set's id of the turn ("D1:3"); questions name their
	// evidence by it.
	ID      string
	Speaker int
	// Text is what the speaker said; a shared image is appended as its
	// caption ("[shares a photo of …]").
	Text string
}

// DialogueQuestion is one question with its gold answer and evidence.
type DialogueQuestion struct {
	Text     string
	Answer   string
	Category string
	// Evidence are the ids of the turns that hold the answer.
	Evidence []string
}

// turnSpacing is the time between two turns of a sitting.
const turnSpacing = time.Minute

// Content is the turn as the benchmark stores it: the speaker's name, then
// the text.
func (d *Dialogue) Content(t *DialogueTurn) string { return d.Speakers[t.Speaker] + ": " + t.Text }

// TurnTime is when turn i of sitting s was said.
func (d *Dialogue) TurnTime(s, i int) int64 {
	return d.Sittings[s].UnixNano + int64(i)*int64(turnSpacing)
}

// Turns is the number of turns of every sitting.
func (d *Dialogue) Turns() int {
	n := 0
	for _, s := range d.Sittings {
		n += len(s.Turns)
	}
	return n
}

// turnRef locates a turn: its sitting and its index in the sitting.
type turnRef struct{ Sitting, Index int }

// index maps every turn id to where it is.
func (d *Dialogue) index() map[string]turnRef {
	ix := map[string]turnRef{}
	for s := range d.Sittings {
		for i, t := range d.Sittings[s].Turns {
			ix[t.ID] = turnRef{s, i}
		}
	}
	return ix
}

// Validate checks that the dialogue has sittings in time order, turns with
// unique ids and speakers 0 or 1, and questions whose evidence names turns
// of the dialogue.
func (d *Dialogue) Validate() error {
	if len(d.Sittings) == 0 {
		return fmt.Errorf("%w: dialogue %s has no sitting", ErrConfig, d.Name)
	}
	seen := map[string]bool{}
	for s, st := range d.Sittings {
		if s > 0 && st.UnixNano <= d.Sittings[s-1].UnixNano {
			return fmt.Errorf("%w: dialogue %s: sitting %d is not after sitting %d", ErrConfig, d.Name, s+1, s)
		}
		for _, t := range st.Turns {
			if t.ID == "" || seen[t.ID] {
				return fmt.Errorf("%w: dialogue %s: turn id %q empty or repeated", ErrConfig, d.Name, t.ID)
			}
			if t.Speaker != 0 && t.Speaker != 1 {
				return fmt.Errorf("%w: dialogue %s: turn %s: speaker %d", ErrConfig, d.Name, t.ID, t.Speaker)
			}
			seen[t.ID] = true
		}
	}
	for _, q := range d.Questions {
		if len(q.Evidence) == 0 {
			return fmt.Errorf("%w: dialogue %s: question %q has no evidence", ErrConfig, d.Name, q.Text)
		}
		for _, e := range q.Evidence {
			if !seen[e] {
				return fmt.Errorf("%w: dialogue %s: question %q: evidence %q is no turn", ErrConfig, d.Name, q.Text, e)
			}
		}
	}
	return nil
}

// dateForms are the ways a context may print the day of t: ISO (how
// agentmem's recalled section and the RAG baseline print it), "8 May 2023",
// "8 May, 2023" and "May 8, 2023".
func dateForms(unixNano int64) []string {
	t := time.Unix(0, unixNano).UTC()
	return []string{t.Format(time.DateOnly), t.Format("2 January 2006"), t.Format("2 January, 2006"), t.Format("January 2, 2006")}
}

// dateNear reports whether one of forms is printed in the dateWindow bytes
// before an occurrence of text in ctx (the header of the item that holds
// it), or right after it on the same line.
func dateNear(ctx, text string, forms []string) bool {
	for off := 0; ; {
		i := strings.Index(ctx[off:], text)
		if i < 0 {
			return false
		}
		i += off
		lo := max(0, i-dateWindow)
		hi := i + len(text)
		if nl := strings.IndexByte(ctx[hi:], '\n'); nl >= 0 {
			hi += nl
		} else {
			hi = len(ctx)
		}
		if containsAny(ctx[lo:i], forms) || containsAny(ctx[i+len(text):hi], forms) {
			return true
		}
		off = i + 1
	}
}

// dateShown reports whether a reader of ctx learns the day (unixNano) of
// the turn text: the last ISO date printed before it is that day (the
// item's own header, or a transcript's date line at each day's first turn;
// a wrong day printed in between fails), or, when no ISO date precedes it,
// one of the day's forms is printed near it (dateNear).
func dateShown(ctx, text string, unixNano int64) bool {
	day := time.Unix(0, unixNano).UTC().Format(time.DateOnly)
	for off := 0; ; {
		i := strings.Index(ctx[off:], text)
		if i < 0 {
			return false
		}
		i += off
		if d := lastISODate(ctx[:i]); d == day || (d == "" && dateNear(ctx[i:], text, dateForms(unixNano))) {
			return true
		}
		off = i + 1
	}
}

// lastISODate is the last YYYY-MM-DD printed in s ("" if none).
func lastISODate(s string) string {
	for i := len(s) - 10; i >= 0; i-- {
		d := s[i : i+10]
		if d[4] == '-' && d[7] == '-' && digits(d[:4]) && digits(d[5:7]) && digits(d[8:]) {
			return d
		}
	}
	return ""
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dateWindow is how far before a turn its date may be printed.
const dateWindow = 160

// answerStopWords are the words of a gold answer that say nothing about
// it: they are not looked for in the context.
var answerStopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true, "on": true,
	"at": true, "for": true, "with": true, "by": true, "from": true, "as": true, "is": true, "was": true,
	"are": true, "were": true, "be": true, "been": true, "it": true, "its": true, "that": true, "this": true,
	"he": true, "she": true, "they": true, "his": true, "her": true, "their": true, "them": true, "him": true,
	"i": true, "my": true, "me": true, "we": true, "our": true, "you": true, "your": true, "not": true,
	"no": true, "yes": true, "so": true, "some": true, "also": true, "about": true, "into": true, "than": true,
	"s": true, "t": true, "did": true, "does": true, "do": true, "has": true, "had": true, "have": true,
}

// words splits s into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// answerWords are the content words of a gold answer, each once.
func answerWords(answer string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range words(answer) {
		if !answerStopWords[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// wordSet is the set of words of a context.
func wordSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range words(s) {
		set[w] = true
	}
	return set
}

// hasWords reports whether every word of want is in set (false when want
// is empty: an answer of stop words alone is scored absent).
func hasWords(set map[string]bool, want []string) bool {
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return len(want) > 0
}
