package limits

import (
	"testing"

	"github.com/agentmem/agentmem/api/wire"
	"github.com/agentmem/agentmem/tenancy"
)

// TestTake: a caller past its own slots is told 429 naming the limit,
// whatever the node has free; the node past its own, 503; a release frees
// both.
func TestTake(t *testing.T) {
	lim := tenancy.DefaultLimits()
	lim.MaxWatches = 1
	a, b := tenancy.Unrestricted(lim), &tenancy.Caller{Principal: "b", Limits: lim}
	s := NewSlots("max_watches", func(l tenancy.Limits) int { return l.MaxWatches })
	node := make(chan struct{}, 2)
	release, err := Take(a, s, node, "watches")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Take(a, s, node, "watches"); code(err) != 429 {
		t.Fatalf("second of the caller's: %v", err)
	}
	rb, err := Take(b, s, node, "watches")
	if err != nil {
		t.Fatal(err)
	}
	c := &tenancy.Caller{Principal: "c", Limits: lim}
	if _, err := Take(c, s, node, "watches"); code(err) != 503 {
		t.Fatalf("past the node's: %v", err)
	}
	release()
	rb()
	if _, err := Take(c, s, node, "watches"); err != nil {
		t.Fatalf("after the releases: %v", err)
	}
}

func code(err error) int {
	if e, ok := err.(*wire.Error); ok {
		return e.Code
	}
	return 0
}
