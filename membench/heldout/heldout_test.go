package heldout

import (
	"os"
	"testing"
)

// TestEmbedded loads the built-in conversations and validates them all.
func TestEmbedded(t *testing.T) {
	cs, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 13 {
		t.Fatalf("%d conversations, want at least 13", len(cs))
	}
	if err := ValidateAll(cs); err != nil {
		t.Fatal(err)
	}
	var turns, facts, replaced, noFact, questions int
	for _, c := range cs {
		for _, s := range c.Sittings {
			turns += len(s.Turns)
		}
		facts += len(c.Facts)
		replaced += len(c.Facts) - len(c.Current())
		noFact += len(c.NoFactTurns)
		questions += len(c.Questions)
	}
	t.Logf("%d conversations, %d turns, %d facts (%d replaced), %d no-fact turns, %d questions",
		len(cs), turns, facts, replaced, noFact, questions)
}

// TestFresh loads the second set and validates it, apart and together with
// the first (a name may not be in both).
func TestFresh(t *testing.T) {
	cs, err := Fresh()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 8 {
		t.Fatalf("%d conversations, want at least 8", len(cs))
	}
	if err := ValidateAll(cs); err != nil {
		t.Fatal(err)
	}
	emb, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateAll(append(emb, cs...)); err != nil {
		t.Fatal(err)
	}
	var sittings, turns, facts, replaced, noFact int
	cats := map[string]int{}
	for _, c := range cs {
		sittings += len(c.Sittings)
		for _, s := range c.Sittings {
			turns += len(s.Turns)
		}
		facts += len(c.Facts)
		replaced += len(c.Facts) - len(c.Current())
		noFact += len(c.NoFactTurns)
		for _, q := range c.Questions {
			cats[q.Category]++
		}
	}
	t.Logf("%d conversations, %d sittings, %d turns, %d facts (%d replaced), %d no-fact turns, questions %v",
		len(cs), sittings, turns, facts, replaced, noFact, cats)
	if _, err := os.Stat("fresh"); err == nil {
		dir, err := Load("fresh")
		if err != nil {
			t.Fatal(err)
		}
		if len(dir) != len(cs) {
			t.Fatalf("Load read %d conversations, the embedded fresh set has %d", len(dir), len(cs))
		}
	}
}

// TestThird loads the third set and validates it, apart and together with
// the first two (a name may not be in two sets), and checks its size.
func TestThird(t *testing.T) {
	cs, err := Third()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 8 {
		t.Fatalf("%d conversations, want at least 8", len(cs))
	}
	if err := ValidateAll(cs); err != nil {
		t.Fatal(err)
	}
	emb, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	fr, err := Fresh()
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateAll(append(append(emb, fr...), cs...)); err != nil {
		t.Fatal(err)
	}
	checkSet(t, "third", cs, func(c Conversation, turns int) {
		if len(c.Sittings) < 4 || len(c.Sittings) > 7 || turns < 80 || turns > 150 {
			t.Errorf("%s: %d sittings and %d turns, want 4-7 sittings and 80-150 turns", c.Name, len(c.Sittings), turns)
		}
	})
}

// TestLong loads the fourth set and validates it, apart and together with
// the other three (a name may not be in two sets), and checks its
// conversations are long: 10-14 sittings and 350-500 turns each.
func TestLong(t *testing.T) {
	cs, err := Long()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 4 {
		t.Fatalf("%d conversations, want at least 4", len(cs))
	}
	if err := ValidateAll(cs); err != nil {
		t.Fatal(err)
	}
	var all []Conversation
	for _, load := range []func() ([]Conversation, error){Embedded, Fresh, Third} {
		other, err := load()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, other...)
	}
	if err := ValidateAll(append(all, cs...)); err != nil {
		t.Fatal(err)
	}
	checkSet(t, "long", cs, func(c Conversation, turns int) {
		if len(c.Sittings) < 10 || len(c.Sittings) > 14 || turns < 350 || turns > 500 {
			t.Errorf("%s: %d sittings and %d turns, want 10-14 sittings and 350-500 turns", c.Name, len(c.Sittings), turns)
		}
		if len(c.Questions) < 25 || len(c.Questions) > 40 {
			t.Errorf("%s: %d questions, want 25-40", c.Name, len(c.Questions))
		}
	})
}

// TestLoadMatchesEmbedded checks Load reads the directory the package embeds.
func TestLoadMatchesEmbedded(t *testing.T) {
	if _, err := os.Stat("data"); err != nil {
		t.Skip("no data directory")
	}
	cs, err := Load("data")
	if err != nil {
		t.Fatal(err)
	}
	emb, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(emb) {
		t.Fatalf("Load read %d conversations, the embedded data has %d", len(cs), len(emb))
	}
}

// TestValidateCatches checks Validate reports the mistakes it is for.
func TestValidateCatches(t *testing.T) {
	good := func() Conversation {
		return Conversation{
			Name: "t", User: "Ana", Other: "Bo",
			Sittings: []Sitting{
				{Date: "2024-01-01T10:00:00Z", Turns: []Turn{
					{ID: "S1:1", Speaker: "user", Text: "I work at Acme."},
					{ID: "S1:2", Speaker: "other", Text: "Nice!"},
					{ID: "S1:3", Speaker: "user", Text: "Thanks!"},
				}},
				{Date: "2024-01-09T10:00:00Z", Turns: []Turn{
					{ID: "S2:1", Speaker: "user", Text: "I'm with Zenith now."},
				}},
			},
			Facts: []Fact{
				{ID: "F1", About: "user", What: "employer", Value: "acme", Turn: "S1:1", ReplacedBy: "F2"},
				{ID: "F2", About: "user", What: "employer", Value: "Zenith", Turn: "S2:1"},
			},
			NoFactTurns: []string{"S1:3"},
			Questions:   []Question{{Q: "Where does Ana work?", Answer: "Zenith", Evidence: []string{"S2:1"}, Category: "correction"}},
		}
	}
	c := good()
	if err := c.Validate(); err != nil {
		t.Fatalf("good conversation: %v", err)
	}
	for name, spoil := range map[string]func(*Conversation){
		"value not in turn":    func(c *Conversation) { c.Facts[1].Value = "Nadir" },
		"replacement earlier":  func(c *Conversation) { c.Facts[0].ReplacedBy = ""; c.Facts[1].ReplacedBy = "F1" },
		"unknown replacement":  func(c *Conversation) { c.Facts[0].ReplacedBy = "F9" },
		"dates not increasing": func(c *Conversation) { c.Sittings[1].Date = "2023-12-31T10:00:00Z" },
		"bad date":             func(c *Conversation) { c.Sittings[0].Date = "yesterday" },
		"no-fact is fact":      func(c *Conversation) { c.NoFactTurns = append(c.NoFactTurns, "S1:1") },
		"no-fact is other's":   func(c *Conversation) { c.NoFactTurns = []string{"S1:2"} },
		"missing evidence":     func(c *Conversation) { c.Questions[0].Evidence = []string{"S3:1"} },
		"bad category":         func(c *Conversation) { c.Questions[0].Category = "hard" },
		"turn id twice":        func(c *Conversation) { c.Sittings[1].Turns[0].ID = "S1:2" },
		"fact on other turn":   func(c *Conversation) { c.Facts[1].Turn = "S1:2"; c.Facts[1].Value = "nice" },
	} {
		c := good()
		spoil(&c)
		if c.Validate() == nil {
			t.Errorf("%s: Validate found nothing", name)
		}
	}
}

// checkSet checks the shape of each conversation of the set in dir
// (shape, given its turn count), that every question category is asked,
// logs the set's counts, and that Load of dir reads as many
// conversations as are embedded.
func checkSet(t *testing.T, dir string, cs []Conversation, shape func(c Conversation, turns int)) {
	t.Helper()
	var sittings, turns, facts, replaced, noFact int
	cats := map[string]int{}
	for _, c := range cs {
		n := 0
		for _, s := range c.Sittings {
			n += len(s.Turns)
		}
		shape(c, n)
		sittings += len(c.Sittings)
		turns += n
		facts += len(c.Facts)
		replaced += len(c.Facts) - len(c.Current())
		noFact += len(c.NoFactTurns)
		for _, q := range c.Questions {
			cats[q.Category]++
		}
	}
	for _, cat := range Categories {
		if cats[cat] == 0 {
			t.Errorf("no %s question", cat)
		}
	}
	t.Logf("%d conversations, %d sittings, %d turns, %d facts (%d replaced), %d no-fact turns, questions %v",
		len(cs), sittings, turns, facts, replaced, noFact, cats)
	if _, err := os.Stat(dir); err == nil {
		loaded, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(loaded) != len(cs) {
			t.Fatalf("Load read %d conversations, the embedded %s set has %d", len(loaded), dir, len(cs))
		}
	}
}
