package consolidate_test

import (
	"fmt"

	"github.com/agentmem/agentmem/internal/consolidate"
)

// A decision, its correction and a fact about the user: each fact has a
// key (subject and attribute), a value and its source.
func ExampleExtract() {
	msgs := []consolidate.Message{
		{ID: "m1", Seq: 1, User: true, Text: "We decided to ship on Friday. By the way, I'm allergic to peanuts."},
		{ID: "m2", Seq: 2, Text: "Noted! Friday it is."},
		{ID: "m3", Seq: 3, User: true, Text: "Actually, make it Monday."},
	}
	for _, f := range consolidate.Extract(msgs, nil) {
		fmt.Printf("%s = %q (%s, from %v, replaces %q)\n", f.Key(), f.Value, f.Type, f.MessageIDs, f.Replaces)
	}
	// Output:
	// fact/we/decision/ship = "ship on Friday" (semantic, from [m1], replaces "")
	// fact/user/allergy/peanuts = "peanuts" (semantic, from [m1], replaces "")
	// fact/we/decision/ship = "ship on Monday" (semantic, from [m3], replaces "ship on Friday")
}
