package projections

import (
	"bytes"
	"crypto/sha256"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/internal/sharedmem"
)

// A context's memory item names its entry's key by digest (the SHA-256 an
// erase names an entry by): a key may be made of the user's words, and an
// erased entry must leave none of them in the contexts that showed it.
// EntryKey reads the key back when a context is read. The file holds no
// digest: a scope's digests are computed once, from its keys in the
// entries bucket, and kept in memory (keySums) while the scope's keys do
// not change but by new ones, so a read hashes no key; a scope of 10,000
// keys costs one pass of 10,000 hashes after each erase or rewrite of it.

// maxKeySumScopes bounds how many scopes' digests are kept: beyond it,
// one is dropped (and computed again when read).
const maxKeySumScopes = 1024

// keySums maps, per scope (scope_key), each key's SHA-256 to the key.
type keySums struct {
	mu sync.Mutex
	// epoch counts the commits that changed any scope's keys: digests
	// computed from a read that began before one are used, not kept.
	epoch  uint64
	scopes map[string]map[[sha256.Size]byte]string
}

// scopedKey is a key of scope_key scope.
type scopedKey struct{ scope, key string }

// keyChanges is what a write transaction did to the scopes' keys: applied
// to keySums once it commits.
type keyChanges struct {
	added   []scopedKey // keys new to their scope
	dropped []string    // scope_keys whose keys were erased or restated
}

// commit applies ch to the digests kept.
func (k *keySums) commit(ch *keyChanges) {
	if len(ch.added) == 0 && len(ch.dropped) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.epoch++
	for _, sk := range ch.dropped {
		delete(k.scopes, sk)
	}
	for _, a := range ch.added {
		if m, ok := k.scopes[a.scope]; ok {
			m[sha256.Sum256([]byte(a.key))] = a.key
		}
	}
}

// EntryKey returns the key of scope ("<kind>:<id>", or "global") whose
// SHA-256 is sum, live or deleted (segmented.KeyOf: a context's memory
// item names its key by digest); ok is false when the projection holds no
// such key (erased, or never projected).
func (s *Store) EntryKey(scope string, sum []byte) (string, bool) {
	if len(sum) != sha256.Size {
		return "", false
	}
	kind, id, err := sharedmem.ParseScopeName(scope)
	if err != nil {
		return "", false
	}
	aggKind := ScopeLogKind(kind)
	if validateScopeArgs(aggKind, id, nil) != nil {
		return "", false
	}
	var h [sha256.Size]byte
	copy(h[:], sum)
	sk := string(scopeKey(aggKind, id))
	k := &s.keySums
	k.mu.Lock()
	if m, ok := k.scopes[sk]; ok {
		key, ok := m[h]
		k.mu.Unlock()
		return key, ok
	}
	epoch := k.epoch
	k.mu.Unlock()
	m := map[[sha256.Size]byte]string{}
	p := append([]byte(sk), sep)
	err = s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketEntries).Cursor()
		for ek, _ := c.Seek(p); ek != nil && bytes.HasPrefix(ek, p); ek, _ = c.Next() {
			key := ek[len(p):]
			m[sha256.Sum256(key)] = string(key)
		}
		return nil
	})
	if err != nil {
		return "", false
	}
	k.mu.Lock()
	if k.epoch == epoch {
		if k.scopes == nil {
			k.scopes = map[string]map[[sha256.Size]byte]string{}
		}
		if len(k.scopes) >= maxKeySumScopes {
			for other := range k.scopes {
				delete(k.scopes, other)
				break
			}
		}
		k.scopes[sk] = m
	}
	// Read under the lock: once kept, m is the scope's map that commit
	// adds the keys of later writes to.
	key, ok := m[h]
	k.mu.Unlock()
	return key, ok
}
