// Package heldout holds and checks membench's held-out conversations: data/
// has one JSON file per conversation, written by hand apart from the
// extractor (data/README.md has the format and how the data was written);
// fresh/ is a second set in the same format, written later by a worker who
// never read the extractor, for figures nobody tuned against
// (fresh/README.md); third/ is a third such set, written later still by
// another worker who never read the extractor (third/README.md); long/ is
// a fourth, of long conversations (10-14 sittings, 350-500 turns each) so
// that a small context budget holds only part of one (long/README.md). The
// package loads and validates them; it scores nothing.
package heldout

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

//go:embed data/*.json
var data embed.FS

//go:embed fresh/*.json
var fresh embed.FS

//go:embed third/*.json
var third embed.FS

//go:embed long/*.json
var long embed.FS

// Conversation is one held-out conversation between the user, whose facts
// are memorised, and the other speaker.
type Conversation struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	User        string     `json:"user"`
	Other       string     `json:"other"`
	Sittings    []Sitting  `json:"sittings"`
	Facts       []Fact     `json:"facts"`
	NoFactTurns []string   `json:"no_fact_turns"`
	Questions   []Question `json:"questions"`
}

// Sitting is one session of the conversation, on one date.
type Sitting struct {
	Date  string `json:"date"`
	Turns []Turn `json:"turns"`
}

// Turn is one message; Speaker is "user" or "other".
type Turn struct {
	ID      string `json:"id"`
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
}

// Fact is one fact the user states about themselves or their own life.
// ReplacedBy names the later fact that corrects or updates it.
type Fact struct {
	ID         string `json:"id"`
	About      string `json:"about"`
	What       string `json:"what"`
	Value      string `json:"value"`
	Turn       string `json:"turn"`
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// Question is asked of the user's memory after the conversation.
type Question struct {
	Q        string   `json:"q"`
	Answer   string   `json:"answer"`
	Evidence []string `json:"evidence"`
	Category string   `json:"category"`
}

// Categories are the question categories a Question may have.
var Categories = []string{"single-hop", "multi-hop", "temporal", "correction", "open"}

// Embedded loads the conversations built into the package.
func Embedded() ([]Conversation, error) {
	sub, err := fs.Sub(data, "data")
	if err != nil {
		return nil, err
	}
	return LoadFS(sub)
}

// Fresh loads the second held-out set built into the package (fresh/),
// apart from Embedded's.
func Fresh() ([]Conversation, error) {
	sub, err := fs.Sub(fresh, "fresh")
	if err != nil {
		return nil, err
	}
	return LoadFS(sub)
}

// Third loads the third held-out set built into the package (third/),
// apart from Embedded's and Fresh's.
func Third() ([]Conversation, error) {
	sub, err := fs.Sub(third, "third")
	if err != nil {
		return nil, err
	}
	return LoadFS(sub)
}

// Long loads the fourth held-out set built into the package (long/), of
// long conversations, apart from the other three.
func Long() ([]Conversation, error) {
	sub, err := fs.Sub(long, "long")
	if err != nil {
		return nil, err
	}
	return LoadFS(sub)
}

// Load loads every *.json file in dir, sorted by file name.
func Load(dir string) ([]Conversation, error) { return LoadFS(os.DirFS(dir)) }

// LoadFS loads every *.json file at the root of fsys, sorted by file name.
// Unknown JSON fields are an error.
func LoadFS(fsys fs.FS) ([]Conversation, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Conversation
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var c Conversation
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(name), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Turn returns the turn with the given id.
func (c *Conversation) Turn(id string) (Turn, bool) {
	for _, s := range c.Sittings {
		for _, t := range s.Turns {
			if t.ID == id {
				return t, true
			}
		}
	}
	return Turn{}, false
}

// Current reports the facts no later fact replaces.
func (c *Conversation) Current() []Fact {
	var out []Fact
	for _, f := range c.Facts {
		if f.ReplacedBy == "" {
			out = append(out, f)
		}
	}
	return out
}

// Validate checks the conversation is well formed: ids are unique, every
// reference names a turn or fact that exists, a fact's value is in its
// turn's text, a replacement comes after what it replaces, dates parse and
// increase, and no-fact turns are user turns that state no fact.
func (c *Conversation) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(c.Name+": "+format, args...))
	}
	if c.Name == "" || c.User == "" || c.Other == "" {
		bad("name, user and other must be set")
	}
	order := map[string]int{} // turn id -> position in the conversation
	speaker := map[string]string{}
	var last time.Time
	for i, s := range c.Sittings {
		d, err := time.Parse(time.RFC3339, s.Date)
		if err != nil {
			bad("sitting %d: date %q: %v", i+1, s.Date, err)
		} else if !d.After(last) {
			bad("sitting %d: date %s is not after the one before", i+1, s.Date)
		} else {
			last = d
		}
		if len(s.Turns) == 0 {
			bad("sitting %d has no turns", i+1)
		}
		for _, t := range s.Turns {
			if _, dup := order[t.ID]; dup {
				bad("turn %s twice", t.ID)
			}
			if t.Speaker != "user" && t.Speaker != "other" {
				bad("turn %s: speaker %q", t.ID, t.Speaker)
			}
			if strings.TrimSpace(t.Text) == "" {
				bad("turn %s has no text", t.ID)
			}
			order[t.ID] = len(order)
			speaker[t.ID] = t.Speaker
		}
	}
	facts := map[string]Fact{}
	factTurns := map[string]bool{}
	for _, f := range c.Facts {
		if _, dup := facts[f.ID]; dup {
			bad("fact %s twice", f.ID)
		}
		facts[f.ID] = f
		if f.About == "" || f.What == "" || f.Value == "" {
			bad("fact %s: about, what and value must be set", f.ID)
		}
		t, ok := c.Turn(f.Turn)
		switch {
		case !ok:
			bad("fact %s: no turn %s", f.ID, f.Turn)
		case t.Speaker != "user":
			bad("fact %s: turn %s is not the user's", f.ID, f.Turn)
		case !strings.Contains(strings.ToLower(t.Text), strings.ToLower(f.Value)):
			bad("fact %s: value %q is not in turn %s", f.ID, f.Value, f.Turn)
		}
		factTurns[f.Turn] = true
	}
	replaced := map[string]bool{}
	for _, f := range c.Facts {
		if f.ReplacedBy == "" {
			continue
		}
		g, ok := facts[f.ReplacedBy]
		switch {
		case !ok:
			bad("fact %s: replaced by unknown fact %s", f.ID, f.ReplacedBy)
		case order[g.Turn] <= order[f.Turn]:
			bad("fact %s: replaced by %s, which does not come later", f.ID, g.ID)
		case replaced[g.ID]:
			bad("fact %s replaces more than one fact", g.ID)
		}
		replaced[f.ReplacedBy] = true
	}
	seen := map[string]bool{}
	for _, id := range c.NoFactTurns {
		switch {
		case seen[id]:
			bad("no-fact turn %s twice", id)
		case speaker[id] == "":
			bad("no-fact turn %s does not exist", id)
		case speaker[id] != "user":
			bad("no-fact turn %s is not the user's", id)
		case factTurns[id]:
			bad("no-fact turn %s states fact", id)
		}
		seen[id] = true
	}
	for i, q := range c.Questions {
		if q.Q == "" || q.Answer == "" {
			bad("question %d: q and answer must be set", i+1)
		}
		if !slices.Contains(Categories, q.Category) {
			bad("question %d: category %q", i+1, q.Category)
		}
		if len(q.Evidence) == 0 {
			bad("question %d has no evidence", i+1)
		}
		for _, id := range q.Evidence {
			if _, ok := order[id]; !ok {
				bad("question %d: evidence %s does not exist", i+1, id)
			}
		}
	}
	return errors.Join(errs...)
}

// ValidateAll validates each conversation and checks names are unique.
func ValidateAll(cs []Conversation) error {
	var errs []error
	names := map[string]bool{}
	for i := range cs {
		if names[cs[i].Name] {
			errs = append(errs, fmt.Errorf("conversation %q twice", cs[i].Name))
		}
		names[cs[i].Name] = true
		if err := cs[i].Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
