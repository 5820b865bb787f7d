package node

import "testing"

// TestDiskPendingWrites: what the projection owes for the appends let
// through is dropped as the projector applies them, in any order of
// acknowledgement.
func TestDiskPendingWrites(t *testing.T) {
	var p pendingWrites
	p.add(3, 300)
	p.add(1, 100)
	p.add(2, 200)
	if got := p.owed(0); got != 600 {
		t.Fatalf("owed before any was applied: %d, want 600", got)
	}
	if got := p.owed(2); got != 300 {
		t.Fatalf("owed once 2 was applied: %d, want 300", got)
	}
	p.add(4, 400)
	if got := p.owed(4); got != 0 || len(p.q) != 0 {
		t.Fatalf("owed once 4 was applied: %d (%d kept), want 0", got, len(p.q))
	}
}
