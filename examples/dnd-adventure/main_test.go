package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestAdventure runs the example end to end: it must finish without error
// (no agent sees another's sheet) and print every agent's own view.
func TestAdventure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, p := range players {
		view := between(got, "=== "+p.name+" ", "===")
		if !strings.Contains(view, "name: "+p.name+"\n") || !strings.Contains(view, "found a silver key") {
			t.Errorf("%s's view does not show its own updated sheet:\n%s", p.name, view)
		}
		if !strings.Contains(got, p.name+" the "+p.class+" enters the crypt") {
			t.Errorf("the party log lacks %s's line", p.name)
		}
	}
	if !strings.Contains(got, "OK: 6 agents") {
		t.Errorf("no success line:\n%s", got)
	}
	t.Log(got)
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}
