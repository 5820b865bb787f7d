package sharedmem

import (
	"bytes"
	"fmt"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/klauspost/compress/zstd"
)

// textValue is n bytes of compressible text that differs by seed.
func textValue(n, seed int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "entry %d of value %d: status ok, total %d\n", i, seed, (i*31+seed)%997)
	}
	return b.Bytes()[:n]
}

// Values stored by earlier builds (zstd at SpeedDefault) or at any other
// level decode to the same bytes: the level is the encoder's choice only.
func TestDecodeValueOtherLevels(t *testing.T) {
	v := textValue(100<<10, 1)
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression} {
		enc, err := newEncoder(level)
		if err != nil {
			t.Fatal(err)
		}
		stored, compressed := encodeWith(enc, v)
		if !compressed {
			t.Fatalf("%v: not compressed", level)
		}
		e := &memoryv1.Entry{Key: "k", Value: stored, Compressed: true, Size: uint32(len(v)), Version: 1}
		got, err := DecodeValue(e)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("%v: decoded %d bytes, %v", level, len(got), err)
		}
		// And through a state built from a snapshot that holds it.
		s := FromSnapshot(&memoryv1.ScopeSnapshot{Keys: []*memoryv1.KeyHistory{{Key: "k", Versions: []*memoryv1.Entry{e}}}})
		if g, err := s.Get("k", 0, t0); err != nil || !bytes.Equal(g.Value, v) || g.Compressed {
			t.Fatalf("%v: Get = %v", level, err)
		}
	}
}

// The cache of original bytes answers gets of compressed current values,
// is filled by the put that compressed them, follows new versions, and
// hands out copies.
func TestPlainCache(t *testing.T) {
	s := New(KindProject, "p")
	v1, v2 := textValue(50<<10, 1), textValue(50<<10, 2)
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: v1}, t0)
	if c, ok := s.cache.values["k"]; !ok || c.version != 1 || !bytes.Equal(c.value, v1) {
		t.Fatalf("the put did not leave its original bytes in the cache: %v", ok)
	}
	g, err := s.Get("k", 0, t0)
	if err != nil || !bytes.Equal(g.Value, v1) || g.Compressed || g.Version != 1 {
		t.Fatalf("Get = %v", err)
	}
	g.Value[0] ^= 0xff // the caller's copy, not the cache's
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: v2}, t0)
	if g, err := s.Get("k", 0, t0); err != nil || !bytes.Equal(g.Value, v2) || g.Version != 2 {
		t.Fatalf("Get after a new put = %v", err)
	}
	if g, err := s.Get("k", 1, t0); err != nil || !bytes.Equal(g.Value, v1) {
		t.Fatalf("Get(version 1) = %v", err)
	}
	checkInvariants(t, s)

	// A state restored from a snapshot fills the cache on the first get.
	r := FromSnapshot(s.Snapshot())
	if len(r.cache.values) != 0 {
		t.Fatal("snapshot carried the cache")
	}
	if g, err := r.Get("k", 0, t0); err != nil || !bytes.Equal(g.Value, v2) {
		t.Fatalf("Get after restore = %v", err)
	}
	if _, ok := r.cache.values["k"]; !ok {
		t.Fatal("the first get did not fill the cache")
	}
	checkInvariants(t, r)

	// A delete drops the key from the cache.
	evs, err := s.DecideDelete(&memoryv1.DeleteEntryRequest{Key: "k"}, "tester", env(t0))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, "", evs)
	if _, ok := s.cache.values["k"]; ok {
		t.Fatal("deleted key still cached")
	}
	checkInvariants(t, s)
}

// The cache holds at most MaxPlainCacheBytes.
func TestPlainCacheBound(t *testing.T) {
	s := New(KindProject, "p")
	n := MaxPlainCacheBytes/(MaxValueBytes/2) + 3
	for i := range n {
		mustPut(t, s, &memoryv1.PutEntryRequest{Key: fmt.Sprintf("k%d", i), Value: textValue(MaxValueBytes/2, i)}, t0)
		checkInvariants(t, s)
	}
	for i := range n {
		if g, err := s.Get(fmt.Sprintf("k%d", i), 0, t0); err != nil || !bytes.Equal(g.Value, textValue(MaxValueBytes/2, i)) {
			t.Fatalf("Get k%d = %v", i, err)
		}
		checkInvariants(t, s)
	}
}

func TestHas(t *testing.T) {
	s := New(KindProject, "p")
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v"), TtlSeconds: 10}, t0)
	if !s.Has("k", t0) || s.Has("other", t0) || s.Has("k", t0+10e9) {
		t.Fatal("Has disagrees with Get")
	}
}

// Values from FastLevelFrom bytes are compressed at SpeedFastest, smaller
// ones at SpeedDefault (their stored bytes unchanged from earlier builds).
func TestEncodeValueLevelBySize(t *testing.T) {
	for _, tc := range []struct {
		size  int
		level zstd.EncoderLevel
	}{{4 << 10, zstd.SpeedDefault}, {FastLevelFrom - 1, zstd.SpeedDefault}, {FastLevelFrom, zstd.SpeedFastest}, {100 << 10, zstd.SpeedFastest}} {
		v := textValue(tc.size, 3)
		enc, err := newEncoder(tc.level)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := encodeWith(enc, v)
		if got, c := EncodeValue(v); !c || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: not the %v encoding", tc.size, tc.level)
		}
	}
}
