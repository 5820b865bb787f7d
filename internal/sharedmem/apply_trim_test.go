package sharedmem

import (
	"crypto/sha256"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestTrimmed: versions updated before the window go, each key's current
// version stays whatever its age (a tombstone too), the state itself is
// not changed.
func TestTrimmed(t *testing.T) {
	snap := &memoryv1.ScopeSnapshot{Kind: "agent", Id: "a", Version: 5, Keys: []*memoryv1.KeyHistory{
		{Key: "a", Versions: []*memoryv1.Entry{{Key: "a", Version: 1, UpdatedUnixNano: 10}, {Key: "a", Version: 2, UpdatedUnixNano: 20}, {Key: "a", Version: 3, UpdatedUnixNano: 30}}},
		{Key: "b", Versions: []*memoryv1.Entry{{Key: "b", Version: 1, UpdatedUnixNano: 5}, {Key: "b", Version: 2, UpdatedUnixNano: 6, Deleted: true}}},
	}}
	s := FromSnapshot(snap)
	b, dropped := s.Trimmed(25)
	if !dropped {
		t.Fatal("nothing dropped")
	}
	got := map[string][]uint64{}
	for _, kh := range b.GetKeys() {
		for _, e := range kh.GetVersions() {
			got[kh.GetKey()] = append(got[kh.GetKey()], e.GetVersion())
		}
	}
	if len(got["a"]) != 1 || got["a"][0] != 3 || len(got["b"]) != 1 || got["b"][0] != 2 {
		t.Fatalf("trimmed to %v, want a:[3] b:[2]", got)
	}
	if _, dropped := s.Trimmed(0); dropped {
		t.Fatal("a window covering everything dropped versions")
	}
	if n := len(s.Snapshot().GetKeys()[0].GetVersions()); n != 3 {
		t.Fatalf("Trimmed changed the state: %d versions of a", n)
	}
}

// TestTrimmedVersionSaysWhy: a version dropped by a compaction (or the
// per-key bound) is a 404 that says it is outside the window; a version
// never written is a plain 404.
func TestTrimmedVersionSaysWhy(t *testing.T) {
	b, _ := FromSnapshot(&memoryv1.ScopeSnapshot{Kind: "agent", Id: "a", Version: 3, Keys: []*memoryv1.KeyHistory{
		{Key: "a", Versions: []*memoryv1.Entry{{Key: "a", Version: 1, UpdatedUnixNano: 10, Value: []byte("x"), Size: 1}, {Key: "a", Version: 2, UpdatedUnixNano: 30, Value: []byte("y"), Size: 1}}},
	}}).Trimmed(20)
	s := FromSnapshot(b)
	if _, err := s.Get("a", 1, 0); err == nil || !strings.Contains(err.Error(), "outside the time-travel window") {
		t.Errorf("get a dropped version: %v", err)
	}
	if _, err := s.Get("a", 7, 0); err == nil || strings.Contains(err.Error(), "window") {
		t.Errorf("get a version never written: %v", err)
	}
	if e, err := s.Get("a", 2, 0); err != nil || string(e.GetValue()) != "y" {
		t.Errorf("get the kept version: %v %v", e, err)
	}
}

// TestKeyBySHA256: a key, live or deleted, is found by its digest; a key
// the scope never held is not.
func TestKeyBySHA256(t *testing.T) {
	s := FromSnapshot(&memoryv1.ScopeSnapshot{Kind: "agent", Id: "a", Version: 3, Keys: []*memoryv1.KeyHistory{
		{Key: "live/key", Versions: []*memoryv1.Entry{{Key: "live/key", Version: 1}}},
		{Key: "gone", Versions: []*memoryv1.Entry{{Key: "gone", Version: 1}, {Key: "gone", Version: 2, Deleted: true}}},
	}})
	for _, k := range []string{"live/key", "gone"} {
		if got, ok := s.KeyBySHA256(sha256.Sum256([]byte(k))); !ok || got != k {
			t.Errorf("KeyBySHA256(%s) = %q, %v", k, got, ok)
		}
	}
	if got, ok := s.KeyBySHA256(sha256.Sum256([]byte("never"))); ok {
		t.Errorf("KeyBySHA256(never) = %q", got)
	}
}
