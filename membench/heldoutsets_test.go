package membench

import (
	"slices"
	"testing"
)

// TestHeldOutSetsRegistered checks every held-out set is a source, loads and
// has conversations, and that the third set is among them.
func TestHeldOutSetsRegistered(t *testing.T) {
	var names []string
	for _, set := range heldOutSets {
		names = append(names, set.name)
		if !slices.Contains(Sources, set.name) {
			t.Errorf("held-out set %q is not in Sources %q", set.name, Sources)
		}
		convs, err := set.load()
		if err != nil {
			t.Fatalf("%s: %v", set.name, err)
		}
		if len(convs) == 0 {
			t.Errorf("%s: no conversations", set.name)
		}
	}
	for _, want := range []string{"heldout", "heldout-fresh", "heldout-third", "heldout-long"} {
		if !slices.Contains(names, want) {
			t.Errorf("held-out set %q is not registered (have %q)", want, names)
		}
	}
}
