package sharedmem

import (
	"fmt"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// state10k returns a scope with 10,000 keys of 200-byte values.
func state10k(b *testing.B) *State {
	b.Helper()
	s := New(KindProject, "bench")
	var evs []proto.Message
	for i := range 10_000 {
		e, err := s.DecidePut(&memoryv1.PutEntryRequest{Key: fmt.Sprintf("key/%05d", i), Value: make([]byte, 200), Tags: []string{"t"}}, "b", env(t0))
		if err != nil {
			b.Fatal(err)
		}
		evs = append(evs, e...)
		if len(evs) == 500 {
			apply(b, s, "", evs)
			evs = nil
		}
	}
	return s
}

func BenchmarkGet(b *testing.B) {
	s := state10k(b)
	for b.Loop() {
		if _, err := s.Get("key/04242", 0, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecidePut(b *testing.B) {
	s := state10k(b)
	req := &memoryv1.PutEntryRequest{Key: "key/04242", Value: make([]byte, 200), ExpectedVersion: i64(1)}
	for b.Loop() {
		if _, err := s.DecidePut(req, "b", env(t0)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApply(b *testing.B) {
	s := state10k(b)
	evs, err := s.DecidePut(&memoryv1.PutEntryRequest{Key: "key/04242", Value: make([]byte, 200)}, "b", env(t0))
	if err != nil {
		b.Fatal(err)
	}
	e := lastEntry(evs)
	for b.Loop() {
		e.Version = s.current(e.Key).Version + 1
		if err := s.Apply(Meta{Version: s.Version() + 1, Seq: s.LastSeq() + 1}, evs); err != nil {
			b.Fatal(err)
		}
	}
}
