package membench

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/membench/heldout"
)

// tinyHeldOut is a conversation in the held-out format, written for the
// test: a city corrected later, a pet's name, small talk.
func tinyHeldOut() heldout.Conversation {
	return heldout.Conversation{
		Name: "scripted", User: "Ines", Other: "Assistant",
		Sittings: []heldout.Sitting{
			{Date: "2024-02-01T10:00:00Z", Turns: []heldout.Turn{
				{ID: "S1:1", Speaker: "user", Text: "Morning! Lovely weather today."},
				{ID: "S1:2", Speaker: "other", Text: "Morning! Where are you based?"},
				{ID: "S1:3", Speaker: "user", Text: "Braga, for now. My cat Miso keeps me company."},
				{ID: "S1:4", Speaker: "user", Text: "My friend just got a job in Faro."},
			}},
			{Date: "2024-03-01T10:00:00Z", Turns: []heldout.Turn{
				{ID: "S2:1", Speaker: "user", Text: "Big change: we moved to Coimbra last week."},
				{ID: "S2:2", Speaker: "other", Text: "Congratulations!"},
			}},
		},
		Facts: []heldout.Fact{
			{ID: "F1", About: "user", What: "city", Value: "Braga", Turn: "S1:3", ReplacedBy: "F3"},
			{ID: "F2", About: "user's cat", What: "name", Value: "Miso", Turn: "S1:3"},
			{ID: "F3", About: "user", What: "city", Value: "Coimbra", Turn: "S2:1"},
		},
		NoFactTurns: []string{"S1:1"},
		Questions: []heldout.Question{
			{Q: "Which city does Ines live in?", Answer: "Coimbra", Evidence: []string{"S2:1"}, Category: "correction"},
		},
	}
}

// scriptedExtractor returns, per sitting, the facts given for it (by the
// id of the sitting's first message).
type scriptedExtractor map[string][]consolidate.Fact

func (scriptedExtractor) Name() string { return "scripted" }

func (s scriptedExtractor) Extract(_ context.Context, msgs []consolidate.Message, _ []consolidate.Fact) ([]consolidate.Fact, error) {
	return s[msgs[0].ID], nil
}

func TestHeldOutExtractionScoring(t *testing.T) {
	fact := func(attr, value string, ids ...string) consolidate.Fact {
		return consolidate.Fact{Subject: "user", Attribute: attr, Value: value, Type: consolidate.Semantic, MessageIDs: ids}
	}
	x := scriptedExtractor{
		"S1:1": {
			fact("home_city", "Braga", "S1:2", "S1:3"), // right
			fact("weather", "lovely", "S1:1"),          // a no-fact turn: wrong
			fact("job_city", "Faro", "S1:4"),           // an unscored turn
			fact("pet_name", "Biscuit", "S1:3"),        // a fact turn, no such value: wrong
			{Subject: "user", Attribute: "tried", Value: "x", Type: consolidate.Episodic, MessageIDs: []string{"S1:3"}}, // the agent's scope
		},
		"S2:1": {fact("home_city", "Coimbra", "S2:1")}, // the correction, same key
	}
	rep, err := RunHeldOutExtraction(context.Background(), []heldout.Conversation{tinyHeldOut()}, []Extractor{x})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Rows[0]
	if r.Extracted != 5 || r.Scored != 4 || r.Correct != 2 || r.FromNoFact != 1 || r.Unscored != 1 {
		t.Fatalf("precision counts: %+v", r)
	}
	if r.Facts != 3 || r.Found != 2 || r.Replaced != 1 || r.Resolved != 1 {
		t.Fatalf("recall and corrections: %+v", r)
	}
	if r.ScriptedFacts != 3 || r.ScriptedFound != 2 || r.ScriptedCurrent != 2 || r.ScriptedPresent != 1 || r.ScriptedStale != 0 {
		t.Fatalf("scripted: %+v", r)
	}
	if len(rep.Misses) != 1 || !strings.Contains(rep.Misses[0], "Miso") {
		t.Fatalf("misses: %q", rep.Misses)
	}
	var b strings.Builder
	if err := rep.Markdown(&b); err != nil || !strings.Contains(b.String(), "| scripted | 5 | 50.0 % (2/4) | 1 | 1 | 66.7 % (2/3) | 100.0 % (1/1) | 2/3 | 1/2 | 0 |") {
		t.Fatalf("markdown %v:\n%s", err, b.String())
	}

	ds, err := HeldOutDialogues([]heldout.Conversation{tinyHeldOut()})
	if err != nil {
		t.Fatal(err)
	}
	d := ds[0]
	if d.Speakers != [2]string{"Ines", "Assistant"} || len(d.Sittings) != 2 || d.Sittings[0].Turns[1].Speaker != 1 || d.Questions[0].Category != "correction" {
		t.Fatalf("dialogue: %+v", d)
	}
}
