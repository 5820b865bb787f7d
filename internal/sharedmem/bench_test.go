package sharedmem

import (
	"fmt"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/klauspost/compress/zstd"
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

// BenchmarkValue100KB: a 100 KB compressible value, encoded at SpeedFastest
// (the level from FastLevelFrom bytes) beside SpeedDefault (the level
// before), and got from the state (through the cache of original bytes)
// beside Plain (decoding it, the path before).
func BenchmarkValue100KB(b *testing.B) {
	v := textValue(100<<10, 1)
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		enc, err := newEncoder(level)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("encode/"+level.String(), func(b *testing.B) {
			b.SetBytes(int64(len(v)))
			var stored []byte
			for b.Loop() {
				stored, _ = encodeWith(enc, v)
			}
			b.ReportMetric(float64(len(stored)), "stored-bytes")
		})
	}
	s := New(KindProject, "bench")
	mustPut(b, s, &memoryv1.PutEntryRequest{Key: "k", Value: v}, t0)
	b.Run("get/cached", func(b *testing.B) {
		b.SetBytes(int64(len(v)))
		for b.Loop() {
			if _, err := s.Get("k", 0, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get/decode", func(b *testing.B) {
		b.SetBytes(int64(len(v)))
		e := s.current("k")
		for b.Loop() {
			if _, err := Plain(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
