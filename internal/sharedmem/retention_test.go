package sharedmem

import (
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestDefaultEpisodicTTL: an episodic entry written without a ttl in a scope
// whose episodic_ttl_seconds is 0 takes the node's default; the scope's own
// setting overrides it, -1 turns it off; other types never expire.
func TestDefaultEpisodicTTL(t *testing.T) {
	const def = int64(90 * 24 * 3600)
	put := func(s *State, key string, mt memoryv1.MemoryType, ttl int64) *memoryv1.Entry {
		t.Helper()
		evs, err := s.DecidePut(&memoryv1.PutEntryRequest{Key: key, Value: []byte("v"), MemoryType: mt, TtlSeconds: ttl}, "w", Env{NowUnixNano: t0, EpisodicTTLSeconds: def})
		if err != nil {
			t.Fatal(err)
		}
		apply(t, s, "", evs)
		return lastEntry(evs)
	}
	ep := memoryv1.MemoryType_MEMORY_TYPE_EPISODIC
	s := New(KindUser, "u1")
	if e := put(s, "ep", ep, 0); e.ExpiresUnixNano != t0+def*1e9 {
		t.Fatalf("default: expires %d, want %d", e.ExpiresUnixNano, t0+def*1e9)
	}
	if e := put(s, "own", ep, 5); e.ExpiresUnixNano != t0+5e9 {
		t.Fatalf("ttl_seconds: expires %d", e.ExpiresUnixNano)
	}
	if e := put(s, "sem", memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC, 0); e.ExpiresUnixNano != 0 {
		t.Fatalf("semantic: expires %d", e.ExpiresUnixNano)
	}
	for _, c := range []struct {
		ttl, want int64
	}{{60, t0 + 60e9}, {NeverExpires, 0}} {
		evs, err := s.DecideConfigure(&memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{EpisodicTtlSeconds: c.ttl}}, env(t0))
		if err != nil {
			t.Fatal(err)
		}
		apply(t, s, "", roundTrip(t, evs))
		if e := put(s, "ep", ep, 0); e.ExpiresUnixNano != c.want {
			t.Fatalf("scope ttl %d: expires %d, want %d", c.ttl, e.ExpiresUnixNano, c.want)
		}
	}
	if _, err := s.DecideConfigure(&memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{EpisodicTtlSeconds: -2}}, env(t0)); code(err) != 400 {
		t.Fatalf("episodic_ttl_seconds -2: %v", err)
	}
	// Replay never re-decides: the recorded expiry stays whatever the
	// default is now.
	r := New(KindUser, "u1")
	evs, _ := New(KindUser, "u1").DecidePut(&memoryv1.PutEntryRequest{Key: "ep", Value: []byte("v"), MemoryType: ep}, "w", Env{NowUnixNano: t0, EpisodicTTLSeconds: 7})
	apply(t, r, "", roundTrip(t, evs))
	if e, _ := r.Get("ep", 1, t0); e.GetExpiresUnixNano() != t0+7e9 {
		t.Fatalf("replayed expiry %d", e.GetExpiresUnixNano())
	}
}

// TestDecideEnd: ending a session scope tombstones every live entry (END),
// after the EXPIRE tombstones due; reads find nothing; a second end is a
// no-op.
func TestDecideEnd(t *testing.T) {
	s := New(KindSession, "s1")
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "a", Value: []byte("1")}, t0)
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "b", Value: []byte("2"), TtlSeconds: 1}, t0)
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "c", Value: []byte("3")}, t0)
	del, err := s.DecideDelete(&memoryv1.DeleteEntryRequest{Key: "c"}, "w", env(t0))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, "", del)
	evs := s.DecideEnd(env(t0 + 2e9))
	var kinds []string
	for _, ev := range evs {
		e := ev.(*memoryv1.EntryChanged).Entry
		kinds = append(kinds, e.Key+":"+e.Change.String())
		if !e.Deleted || e.Value != nil || e.ExpiresUnixNano != 0 {
			t.Fatalf("not a tombstone: %v", e)
		}
	}
	if len(kinds) != 2 || kinds[0] != "b:CHANGE_KIND_EXPIRE" || kinds[1] != "a:CHANGE_KIND_END" {
		t.Fatalf("end: %v", kinds)
	}
	apply(t, s, "", roundTrip(t, evs))
	if l, _, _ := s.List(&memoryv1.ListEntriesRequest{}, t0+2e9); len(l) != 0 || s.Live() != 0 {
		t.Fatalf("live after end: %v (%d)", l, s.Live())
	}
	if evs := s.DecideEnd(env(t0 + 3e9)); len(evs) != 0 {
		t.Fatalf("second end: %v", evs)
	}
}
