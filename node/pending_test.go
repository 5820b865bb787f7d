package node

import "testing"

// TestDiskPendingWrites: what the projection owes for the appends let
// through is dropped as the projector applies them, in any order of
// acknowledgement.
func TestDiskPendingWrites(t *testing.T) {
	var p pendingWrites
	p.add(0, 3, 300)
	p.add(0, 1, 100)
	p.add(0, 2, 200)
	if got := p.owed(upTo(0)); got != 600 {
		t.Fatalf("owed before any was applied: %d, want 600", got)
	}
	if got := p.owed(upTo(2)); got != 300 {
		t.Fatalf("owed once 2 was applied: %d, want 300", got)
	}
	p.add(0, 4, 400)
	if got := p.owed(upTo(4)); got != 0 || len(p.q) != 0 {
		t.Fatalf("owed once 4 was applied: %d (%d kept), want 0", got, len(p.q))
	}
}

func upTo(seq uint64) func(int) uint64 { return func(int) uint64 { return seq } }

// TestDiskPendingWritesPartitions: with the log in partitions an append
// is owed until its own partition applied it, whatever the others did.
func TestDiskPendingWritesPartitions(t *testing.T) {
	var p pendingWrites
	p.add(0, 5, 500)
	p.add(3, 2, 200)
	applied := map[int]uint64{0: 1, 3: 9}
	of := func(part int) uint64 { return applied[part] }
	if got := p.owed(of); got != 500 {
		t.Fatalf("owed: %d, want 500 (partition 3 applied its append, 0 not)", got)
	}
	applied[0] = 5
	if got := p.owed(of); got != 0 {
		t.Fatalf("owed: %d, want 0", got)
	}
}
