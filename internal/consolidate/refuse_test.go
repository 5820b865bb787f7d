package consolidate

import (
	"strings"
	"testing"
)

// refusal is a sentence of everyday chat that states no fact of the user
// under attr (a key, or a key's prefix ending in "/").
type refusal struct {
	class, q, said, attr string
}

// TestRefusedStatements: the extractor writes nothing for the key named.
func TestRefusedStatements(t *testing.T) {
	for _, c := range refusals {
		msgs := []Message{{ID: "a", Seq: 1, Text: c.q}, {ID: "u", Seq: 2, User: true, Text: c.said}}
		for _, f := range Extract(msgs, nil) {
			if f.Attribute == c.attr || (strings.HasSuffix(c.attr, "/") && strings.HasPrefix(f.Attribute, c.attr)) {
				t.Errorf("%s: %q: wrote %s %s = %q", c.class, c.said, f.Subject, f.Attribute, f.Value)
			}
		}
	}
}

var refusals = []refusal{
	// Something the user is busy with now, no date named: a passing
	// activity, not a plan.
	{"passing activity", "Hi!", "I'm working on a jigsaw with the grandkids.", "plan/"},
	{"passing activity", "Hi!", "I'm working on my patience, ha.", "plan/"},
	{"passing activity", "Hi!", "I'm planning my escape.", "plan/"},
	{"passing activity", "Hi!", "I'm running a bath.", "plan/"},
	{"passing activity", "Hi!", "I'm writing a list.", "plan/"},
	{"passing activity", "Hi!", "I'm organizing my sock drawer.", "plan/"},
	{"passing activity", "Hi!", "I'm building a case against my neighbour.", "plan/"},
	// A past event with no date and no mark of who the user is: a
	// passing errand or a figure of speech.
	{"passing event", "Hi!", "I bought a coffee.", "bought/"},
	{"passing event", "Hi!", "I ran a red light.", "ran/"},
	{"passing event", "Hi!", "I created a monster.", "created/"},
	{"passing event", "Hi!", "I built a fire.", "built/"},
	{"passing event", "Hi!", "I passed a car crash on the way.", "passed/"},
	{"passing event", "Hi!", "I opened a bottle of wine.", "opened/"},
	{"passing event", "Hi!", "I finished my shift.", "finished/"},
	{"passing event", "Hi!", "I won a tenner on the lottery.", "won/"},
}

// TestKeptStatements: what the refusals must not cost.
func TestKeptStatements(t *testing.T) {
	for _, c := range keptStatements {
		msgs := []Message{{ID: "a", Seq: 1, Text: c.q}, {ID: "u", Seq: 2, User: true, Text: c.said}}
		found := false
		for _, f := range Extract(msgs, nil) {
			found = found || f.Attribute == c.attr || (strings.HasSuffix(c.attr, "/") && strings.HasPrefix(f.Attribute, c.attr))
		}
		if !found {
			t.Errorf("%s: %q: wrote no %s", c.class, c.said, c.attr)
		}
	}
}

var keptStatements = []refusal{
	{"plan with a date", "Hi!", "I'm hosting a barbecue on Saturday.", "plan/"},
	{"event trained for", "Hi!", "I'm training for a half marathon.", "plan/"},
	{"dated event", "Hi!", "I bought a house in March.", "bought/"},
	{"lasting event", "Hi!", "I published a cookbook.", "published/"},
	{"lasting event", "Hi!", "I graduated from Leeds Beckett.", "graduated_from/"},
}
