package inspector

import (
	"fmt"
	"testing"
)

// The cached indexes hold at most maxIndexedBatches batches together: the
// least recently used go first, the one asked for stays whatever its size.
func TestIndexesBoundedByBatches(t *testing.T) {
	defer func(n int) { maxIndexedBatches = n }(maxIndexedBatches)
	maxIndexedBatches = 100
	x := newIndexes()
	fill := func(id string, n int) {
		s := x.get(id)
		s.mu.Lock()
		s.refs = make([]batchRef, n)
		s.held.Store(int64(n))
		s.mu.Unlock()
	}
	for i := range 4 {
		fill(fmt.Sprint("s", i), 40) // 160 batches held once s3 is read
	}
	x.get("s3") // s0 and s1 (the oldest used) go: 80 left
	if _, ok := x.m["s0"]; ok {
		t.Fatalf("s0 kept: %d indexes", len(x.m))
	}
	if _, ok := x.m["s1"]; ok {
		t.Fatalf("s1 kept: %d indexes", len(x.m))
	}
	if len(x.m) != 2 {
		t.Fatalf("%d indexes, want s2 and s3", len(x.m))
	}
	fill("big", 500) // larger than the bound alone: kept while asked for
	x.get("big")
	if _, ok := x.m["big"]; !ok || len(x.m) != 1 {
		t.Fatalf("indexes %v, want the big one alone", len(x.m))
	}
}
