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

// TestDefaultSources checks the default sources are known sources and leave
// out the long set, which runs only when named.
func TestDefaultSources(t *testing.T) {
	for _, s := range DefaultSources {
		if !slices.Contains(Sources, s) {
			t.Errorf("default source %q is not in Sources %q", s, Sources)
		}
	}
	if slices.Contains(DefaultSources, "heldout-long") {
		t.Errorf("DefaultSources %q hold heldout-long", DefaultSources)
	}
	if len(DefaultSources) != len(Sources)-1 {
		t.Errorf("DefaultSources %q should be Sources %q less heldout-long", DefaultSources, Sources)
	}
}
