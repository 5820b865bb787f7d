package sharedmem

import (
	"crypto/sha256"
	"fmt"
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// Apply applies one stored batch: the events (EntryChanged, ScopeConfigured),
// then meta (version, last_seq, and the command in recent_commands, keeping
// the last MaxRecentCommands). It never reads a clock, compresses or
// decides: entries are stored as the events carry them. The one bound it
// keeps is MaxVersionsPerKey: the oldest versions of a key beyond it are
// dropped. Apply is atomic: the whole batch is checked first, and on error
// the state is unchanged.
func (s *State) Apply(meta Meta, events []proto.Message) error {
	if meta.Version <= s.snap.Version {
		return fmt.Errorf("%w: version %d after version %d", ErrApply, meta.Version, s.snap.Version)
	}
	if err := s.check(events); err != nil {
		return err
	}
	dirty := false // the earliest-expiring entry was replaced
	for _, ev := range events {
		switch e := ev.(type) {
		case *memoryv1.EntryChanged:
			if s.applyEntry(proto.Clone(e.Entry).(*memoryv1.Entry)) {
				dirty = true
			}
		case *memoryv1.ScopeConfigured:
			s.snap.Config = &memoryv1.ScopeConfig{MaxEntries: e.MaxEntries, EpisodicTtlSeconds: e.EpisodicTtlSeconds, ConflictStrategy: e.ConflictStrategy}
		case *memoryv1.ScopeBaseline:
			s.restate(e.GetState())
			dirty = true
		}
	}
	if dirty {
		s.recount()
	}
	s.snap.Version = meta.Version
	s.snap.LastSeq = meta.Seq
	if meta.CommandID != "" {
		s.snap.RecentCommands = append(s.snap.RecentCommands, &memoryv1.CommandResult{
			CommandId: meta.CommandID, Version: meta.Version, Seq: meta.Seq, Digest: meta.Digest,
		})
		if n := len(s.snap.RecentCommands); n > MaxRecentCommands {
			// Reslice, do not copy: append reallocates (keeping only the
			// window) when the backing array is full, so this is O(1)
			// amortized.
			s.snap.RecentCommands = s.snap.RecentCommands[n-MaxRecentCommands:]
		}
	}
	return nil
}

// check verifies that every event of a batch fits the state as the batch
// goes: known types, valid keys, each version the key's previous version
// plus one, tombstones only over live versions.
func (s *State) check(events []proto.Message) error {
	type head struct {
		version uint64
		live    bool
	}
	pending := map[string]head{}
	for i, ev := range events {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%w: event %d (%T): %s", ErrApply, i, ev, fmt.Sprintf(format, args...))
		}
		switch e := ev.(type) {
		case *memoryv1.EntryChanged:
			en := e.GetEntry()
			if en == nil {
				return fail("no entry")
			}
			if err := ValidateKey(en.Key); err != nil {
				return fail("%v", err)
			}
			h, ok := pending[en.Key]
			if !ok {
				if cur := s.current(en.Key); cur != nil {
					h = head{cur.Version, !cur.Deleted}
				}
			}
			if en.Version != h.version+1 {
				return fail("key %q version %d after version %d", en.Key, en.Version, h.version)
			}
			if en.Deleted && !h.live {
				return fail("tombstone for key %q, which is not live", en.Key)
			}
			pending[en.Key] = head{en.Version, !en.Deleted}
		case *memoryv1.ScopeConfigured:
			if e.EpisodicTtlSeconds < NeverExpires {
				return fail("episodic TTL below -1 (never)")
			}
		case *memoryv1.ScopeBaseline:
			if len(events) != 1 || e.GetState() == nil {
				return fail("a baseline comes alone and carries a state")
			}
		case nil:
			return fail("nil event")
		default:
			return fail("unknown event type")
		}
	}
	return nil
}

// applyEntry stores a checked entry as its key's new current version. It
// reports whether the replaced current version held the earliest expiry
// (so the derived values must be recounted).
func (s *State) applyEntry(e *memoryv1.Entry) (dirty bool) {
	kh, ok := s.index[e.Key]
	if !ok {
		kh = &memoryv1.KeyHistory{Key: e.Key}
		s.snap.Keys = slices.Insert(s.snap.Keys, s.search(e.Key), kh)
		s.index[e.Key] = kh
	} else {
		prev := last(kh)
		if !prev.Deleted {
			s.count(prev, -1)
			if prev.ExpiresUnixNano > 0 && prev.ExpiresUnixNano == s.nextExpiry {
				dirty = true
			}
		}
	}
	kh.Versions = append(kh.Versions, e)
	s.cacheApplied(e)
	if n := len(kh.Versions); n > MaxVersionsPerKey {
		kh.Versions = slices.Delete(kh.Versions, 0, n-MaxVersionsPerKey)
	}
	if !e.Deleted {
		s.count(e, 1)
		if x := e.ExpiresUnixNano; x > 0 && (s.nextExpiry == 0 || x < s.nextExpiry) {
			s.nextExpiry = x
		}
	}
	return dirty
}

// restate replaces the keys and configuration by a baseline's (an entry
// erase or a compaction rewrote the scope); the scope's kind,
// id, version and recent commands stay its own.
func (s *State) restate(b *memoryv1.ScopeSnapshot) {
	b = proto.Clone(b).(*memoryv1.ScopeSnapshot)
	s.snap.Keys, s.snap.Config = b.GetKeys(), b.GetConfig()
	if s.snap.Config == nil {
		s.snap.Config = &memoryv1.ScopeConfig{}
	}
	s.snap.Keys = slices.DeleteFunc(s.snap.Keys, func(k *memoryv1.KeyHistory) bool { return len(k.GetVersions()) == 0 })
	slices.SortStableFunc(s.snap.Keys, cmpHistory)
	s.cache = plainCache{}
	s.reindex()
}

// Without returns the scope's state as a baseline without key's versions
// (an entry erase), and whether the scope held any.
func (s *State) Without(key string) (*memoryv1.ScopeSnapshot, bool) {
	if _, ok := s.index[key]; !ok {
		return nil, false
	}
	b := s.Snapshot()
	b.Keys = slices.DeleteFunc(b.Keys, func(k *memoryv1.KeyHistory) bool { return k.GetKey() == key })
	b.RecentCommands = nil
	return b, true
}

// KeyBySHA256 returns the key, live or deleted, whose SHA-256 is sum (an
// erase names an entry by it), and whether the scope holds one.
func (s *State) KeyBySHA256(sum [sha256.Size]byte) (string, bool) {
	for key := range s.index {
		if sha256.Sum256([]byte(key)) == sum {
			return key, true
		}
	}
	return "", false
}

// Trimmed returns the scope's state as a baseline that keeps only what the
// time-travel window needs (a compaction): every version of a
// key updated at or after before, and the key's current version whatever
// its age (a tombstone included, so versions keep counting from it). The
// second result reports whether any version was dropped.
func (s *State) Trimmed(before int64) (*memoryv1.ScopeSnapshot, bool) {
	b := s.Snapshot()
	b.RecentCommands = nil
	dropped := false
	for _, kh := range b.Keys {
		vs := kh.GetVersions()
		kept := vs[:0]
		for i, e := range vs {
			if i == len(vs)-1 || e.GetUpdatedUnixNano() >= before {
				kept = append(kept, e)
			} else {
				dropped = true
			}
		}
		kh.Versions = kept
	}
	return b, dropped
}
