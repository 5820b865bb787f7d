package consistency

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeProjection is a projection of partitions whose checkpoints the test
// moves (applied) and whose streams end at ends.
type fakeProjection struct {
	mu      sync.Mutex
	applied []uint64
	ends    []uint64
	moved   chan struct{}
}

func newFake(applied, ends []uint64) *fakeProjection {
	return &fakeProjection{applied: applied, ends: ends, moved: make(chan struct{})}
}

func (f *fakeProjection) AppliedSeqOf(part int) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied[part]
}

func (f *fakeProjection) apply(part int, seq uint64) {
	f.mu.Lock()
	f.applied[part] = seq
	close(f.moved)
	f.moved = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeProjection) WaitForAll(ctx context.Context, targets []uint64) error {
	for {
		f.mu.Lock()
		ch, done := f.moved, true
		for i, t := range targets {
			done = done && f.applied[i] >= t
		}
		f.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *fakeProjection) LogEndOf(_ context.Context, part int, _ uint64) (uint64, error) {
	return f.ends[part], nil
}

func mustSet(t *testing.T, s string, k int) Set {
	t.Helper()
	set, err := Parse(s, k)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestWaitForNamedPartitionOnly(t *testing.T) {
	// Partition 1 is far behind; the token names partition 3 alone.
	p := newFake([]uint64{0, 1, 0, 5, 0, 0}, []uint64{0, 100, 0, 9, 0, 0})
	done := make(chan error, 1)
	go func() { done <- Wait(context.Background(), p, mustSet(t, "k6:p3:9", 6), 5*time.Second) }()
	select {
	case err := <-done:
		t.Fatalf("returned %v before partition 3 applied 9", err)
	case <-time.After(20 * time.Millisecond):
	}
	p.apply(3, 9)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWaitRefusesBeyondStreamAndTimesOut(t *testing.T) {
	p := newFake([]uint64{3, 3}, []uint64{4, 7})
	err := Wait(context.Background(), p, mustSet(t, "k2:p0:4,k2:p1:8", 2), time.Second)
	if code, field, why := err.(*Error).Status(); code != 400 || field != Field || !errors.Is(err, ErrBeyond) || !strings.Contains(why, "beyond partition 1's last sequence (7)") {
		t.Fatalf("beyond the stream: %v", err)
	}
	err = Wait(context.Background(), p, mustSet(t, "k2:p1:7", 2), 10*time.Millisecond)
	if code, field, why := err.(*Error).Status(); code != 503 || field != Field || !strings.Contains(why, "partition 1 has applied 3, not yet 7") {
		t.Fatalf("late: %v", err)
	}
	if err := Wait(context.Background(), p, mustSet(t, "k2:p0:3", 2), time.Millisecond); err != nil {
		t.Fatalf("applied already: %v", err)
	}
	if err := Wait(context.Background(), nil, mustSet(t, "k2:p0:3", 2), time.Millisecond); err.(*Error).Code != 503 {
		t.Fatalf("no projection: %v", err)
	}
}
