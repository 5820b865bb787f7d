package projections

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func keySum(key string) []byte {
	s := sha256.Sum256([]byte(key))
	return s[:]
}

// TestEntryKey: a key is read back by its digest, tombstoned or not; a key
// written after the scope's digests were computed is found too; a key
// erased (a baseline without it) or of a scope erased whole is not; bad
// input finds nothing.
func TestEntryKey(t *testing.T) {
	l := newScopeLog(t)
	l.record("user", "u1", l.put("user", "u1", "episode/user/tried/the_wombat_router", "restarted it"))
	l.record("user", "u1", l.put("user", "u1", "diet", "vegetarian"))
	l.record("user", "u1", l.put("user", "u1", "gone", "x"))
	l.record("user", "u1", l.del("user", "u1", "gone"))
	l.record("agent", "a1", l.put("agent", "a1", "tone", "brief"))
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	find := func(what, scope, key string, want bool) {
		t.Helper()
		got, ok := s.EntryKey(scope, keySum(key))
		if ok != want || (ok && got != key) {
			t.Errorf("%s: EntryKey(%s, sha256(%s)) = %q, %v; want found %v", what, scope, key, got, ok, want)
		}
	}
	find("live", "user:u1", "episode/user/tried/the_wombat_router", true)
	find("kept", "user:u1", "diet", true)
	find("tombstoned", "user:u1", "gone", true)
	find("another scope's key", "user:u1", "tone", false)
	find("its own scope", "agent:a1", "tone", true)
	if _, ok := s.EntryKey("user:u1", []byte("short")); ok {
		t.Error("a digest of 5 bytes found a key")
	}
	if _, ok := s.EntryKey("not a scope", keySum("diet")); ok {
		t.Error("a bad scope name found a key")
	}

	// A key new since the digests were kept.
	n := len(l.recs)
	l.record("user", "u1", l.put("user", "u1", "later", "y"))
	mustApply(t, s, l.recs[n:])
	find("written after", "user:u1", "later", true)

	// An entry erase: the scope restated without the key.
	n = len(l.recs)
	l.record("user", "u1", &memoryv1.ScopeBaseline{RemovalId: "r1", State: &memoryv1.ScopeSnapshot{Kind: "user", Id: "u1", Keys: []*memoryv1.KeyHistory{
		{Key: "diet", Versions: []*memoryv1.Entry{l.last["user/u1/diet"]}},
		{Key: "later", Versions: []*memoryv1.Entry{l.last["user/u1/later"]}},
	}}})
	mustApply(t, s, l.recs[n:])
	find("erased", "user:u1", "episode/user/tried/the_wombat_router", false)
	find("restated", "user:u1", "diet", true)

	// A whole scope's erase.
	n = len(l.recs)
	l.record(events.KindRemoval, "r2", &memoryv1.LogRemoval{Id: "r2", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "user:u1", Erased: []string{"user.u1"}})
	mustApply(t, s, l.recs[n:])
	find("scope erased", "user:u1", "diet", false)
	find("another scope", "agent:a1", "tone", true)
}

// TestEntryKeyBesideWrites: EntryKey read beside the writes that add keys
// to the scopes it has just computed (run under -race: the scope's map it
// keeps is the one later commits write to, so it must be read under the
// lock).
func TestEntryKeyBesideWrites(t *testing.T) {
	const scopes = 200
	l := newScopeLog(t)
	for i := range scopes {
		u := fmt.Sprintf("u%d", i)
		l.record("user", u, l.put("user", u, "first", "x"))
	}
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	var more []Decoded
	for i := range scopes {
		u := fmt.Sprintf("u%d", i)
		l.record("user", u, l.put("user", u, "second", "y"))
		more = append(more, l.recs[len(l.recs)-1])
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, r := range more {
			mustApply(t, s, []Decoded{r})
		}
	}()
	for i := range scopes {
		if key, ok := s.EntryKey(fmt.Sprintf("user:u%d", i), keySum("first")); !ok || key != "first" {
			t.Errorf("user:u%d: EntryKey(first) = %q %v", i, key, ok)
		}
	}
	<-done
}
