package consolidate

import (
	"embed"
	"strings"
	"time"
	"unicode"
)

// Type is a fact's memory type.
type Type int

// Memory types.
const (
	Semantic   Type = iota + 1 // facts and preferences: the user's scope
	Episodic                   // what was tried and how it ended, what happened: episodes
	Procedural                 // refined instructions: the user's scope
)

func (t Type) String() string {
	switch t {
	case Semantic:
		return "semantic"
	case Episodic:
		return "episodic"
	case Procedural:
		return "procedural"
	}
	return "unspecified"
}

// Message is one message of a conversation, as Extract reads it.
type Message struct {
	ID   string
	Seq  uint64
	User bool // written by the user (only user messages are read for facts)
	Text string
	// Said is when the message was said (Unix nanoseconds): the time an
	// imported message carries, else when it was appended; 0 when unknown.
	// Relative dates ("yesterday", "next month") are resolved against it.
	Said int64
}

// Fact is one extracted fact.
type Fact struct {
	Subject   string // "user", "we", "son", "pet/dog"
	Attribute string // "home_city", "name", "allergy/peanuts"
	Value     string // "Porto", "Leo", "peanuts"
	Type      Type
	// Label says what the value is of, in words ("lives in", "son's
	// name"); "" derives it from the subject and attribute.
	Label string
	// Confidence in (0, 1]: how sure the rule is that the statement is a
	// fact of this subject and attribute.
	Confidence float64
	// Correction: the statement replaces an earlier value (Replaces, when
	// known).
	Correction bool
	Replaces   string
	// Statement is the sentence the fact was read from; Context what the
	// entry quotes (the sentence whole, as the user said it).
	Statement, Context string
	// MessageIDs are the messages it was read from (a value given in
	// answer to a question names both), Seq the last one's.
	MessageIDs []string
	Seq        uint64
	// Rule names the rule that read it (for reports and tests).
	Rule string
	// Retract: the user says the fact no longer holds ("I'm not allergic
	// to peanuts anymore"); the writer deletes the entry (its history
	// keeps the value). Value is the value retracted.
	Retract bool
	// Said is when the statement was said (Unix nanoseconds, 0 unknown).
	Said int64
	// Date is the date the statement names, resolved against Said:
	// "2023-05-07" (a day), "2023-05" (a month), "2023" (a year), "the
	// week of 2023-05-01", "the weekend of 2023-05-06"; "" when none.
	Date string
	// When is the words the date was read from ("yesterday", "next
	// month"), "" when none.
	When string

	at int // where in its sentence it was read (orders one sentence's facts)
}

// Key is the fact's entry key: its type's prefix, subject and attribute.
// Facts with one key are one fact; a new value is a new version.
func (f Fact) Key() string {
	p := "fact/"
	switch f.Type {
	case Episodic:
		p = "episode/"
	case Procedural:
		p = "instruction/"
	}
	return p + f.Subject + "/" + f.Attribute
}

// Day formats a time (Unix nanoseconds) as its UTC day, "2023-05-08".
func Day(unixNano int64) string {
	return time.Unix(0, unixNano).UTC().Format(time.DateOnly)
}

// Text is the entry value: what the value is of, the value, the date it
// names, when it was said, and the sentence whole in quotes:
//
//	works as: Weight Watchers coach (said 2023-05-08): "I've been a Weight Watchers coach for a year now."
//	went to: book fair on 2023-05-07 (said 2023-05-08): "I went to a book fair yesterday."
//
// An instruction is what the user said; an episode what the user said,
// with when.
func (f Fact) Text() string {
	said := ""
	if f.Said != 0 {
		said = " (said " + Day(f.Said) + ")"
	}
	switch f.Type {
	case Procedural:
		return f.Value
	case Episodic:
		return f.Value + said
	}
	var b strings.Builder
	b.WriteString(f.label())
	b.WriteString(": ")
	b.WriteString(f.Value)
	if f.Date != "" {
		b.WriteString(datePrep(f.Date))
		b.WriteString(f.Date)
	}
	b.WriteString(said)
	if f.Context != "" {
		b.WriteString(`: "`)
		b.WriteString(f.Context)
		b.WriteString(`"`)
	}
	return b.String()
}

// datePrep is the preposition before a resolved date: " on 2023-05-07",
// " in 2023-05", " in the week of …".
func datePrep(d string) string {
	if (len(d) == 10 && d[4] == '-' && d[7] == '-') || strings.HasPrefix(d, "the weekend") {
		return " on "
	}
	return " in "
}

// label is f.Label, or the subject and attribute in words.
func (f Fact) label() string {
	if f.Label != "" {
		return f.Label
	}
	return labelOf(f.Subject, f.Attribute)
}

//go:embed data/*.txt
var data embed.FS

func readList(name string) map[string]bool {
	b, err := data.ReadFile("data/" + name)
	if err != nil {
		panic("consolidate: " + err.Error())
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			out[strings.ToLower(l)] = true
		}
	}
	if len(out) == 0 {
		panic("consolidate: data/" + name + " is empty")
	}
	return out
}

// slug returns s as a key segment: lower-case letters and digits joined by
// '_', at most 48 bytes.
func slug(s string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(s) {
		if b.Len() >= 48 {
			break
		}
		switch {
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			sep = false
		default:
			sep = true
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return strings.TrimRight(b.String(), "_")
}

// Stamp gives each fact of fs that has no said time the said time of its
// last source message in msgs (an extractor that does not read them, such
// as an LLM's, still records when each fact was said).
func Stamp(fs []Fact, msgs []Message) {
	said := make(map[string]int64, len(msgs))
	for _, m := range msgs {
		said[m.ID] = m.Said
	}
	for i := range fs {
		if fs[i].Said != 0 {
			continue
		}
		for _, id := range fs[i].MessageIDs {
			if t := said[id]; t != 0 {
				fs[i].Said = t
			}
		}
	}
}
