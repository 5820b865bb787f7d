package consolidate

import (
	"embed"
	"strings"
	"unicode"
)

// Type is a fact's memory type (DESIGN §6).
type Type int

// Memory types.
const (
	Semantic   Type = iota + 1 // facts and preferences: the user's scope
	Episodic                   // what was tried and how it ended: the agent's scope
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
	// Question: the message (an assistant's) ends with a question, which a
	// user's next message may answer ("Who's teaching it?" "Mara, …").
	Text string
}

// Fact is one extracted fact.
type Fact struct {
	Subject   string // "user", "we", "daughter", "pet/maine_coon"
	Attribute string // "home_city", "name", "allergy/peanuts"
	Value     string // "Porto", "Ana", "peanuts"
	Type      Type
	// Confidence in (0, 1]: how sure the rule is that the statement is a
	// fact of this subject and attribute.
	Confidence float64
	// Correction: the statement replaces an earlier value (Replaces, when
	// known).
	Correction bool
	Replaces   string
	// Statement is the sentence the fact was read from; Context that
	// sentence and the next one of the message (what the user said around
	// the value, for a reader and the search).
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

// Text is the entry value: the subject and attribute in words, then the
// value, then what the user said ("user home city: Porto. Said: \"I moved
// to Porto last month.\""), so a reader (and the search) sees what the
// value is of. Episodes and instructions are what the user said.
func (f Fact) Text() string {
	if f.Type != Semantic {
		return f.Value
	}
	about := strings.NewReplacer("/", " ", "_", " ").Replace(f.Subject + " " + f.Attribute)
	if f.Context == "" {
		return about + ": " + f.Value
	}
	return about + ": " + f.Value + `. Said: "` + f.Context + `"`
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

var (
	relations  = readList("relations.txt")
	attributes = readList("attributes.txt")
	roles      = readList("roles.txt")
	jobs       = readList("professions.txt")
)

// slug returns s as a key segment: lower-case letters and digits joined by
// '_', at most 48 bytes.
func slug(s string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(s) {
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
		if b.Len() >= 48 {
			break
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}
