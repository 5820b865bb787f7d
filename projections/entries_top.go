package projections

import (
	"bytes"
	"cmp"
	"slices"

	bolt "go.etcd.io/bbolt"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// MaxTopEntriesScan bounds the entries TopEntries reads in one scope (in
// key order); a scope with more is ranked on its first MaxTopEntriesScan.
const MaxTopEntriesScan = 512

// TopEntries returns at most limit live entries of one scope (aggregateKind
// is the log kind, as in Entry), by importance, then the most recently
// updated first, then key: what the context assembler offers besides the
// entries that match the user's message. Tombstones and entries past their
// expiry are left out. Values are the original bytes (compressed=false).
func (s *Store) TopEntries(aggregateKind, scopeID string, limit int) ([]*memoryv1.Entry, error) {
	if err := validateScopeArgs(aggregateKind, scopeID, nil); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	now := searchNow().UnixNano()
	var all []*memoryv1.Entry
	err := s.view(func(tx *bolt.Tx) error {
		p := append(scopeKey(aggregateKind, scopeID), sep)
		c := tx.Bucket(bucketEntries).Cursor()
		n := 0
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && n < MaxTopEntriesScan; k, v = c.Next() {
			n++
			e, err := unmarshalPlain(v, k)
			if err != nil {
				return err
			}
			if e.GetDeleted() || (e.GetExpiresUnixNano() > 0 && e.GetExpiresUnixNano() <= now) {
				continue
			}
			all = append(all, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b *memoryv1.Entry) int {
		if c := cmp.Compare(b.GetImportance(), a.GetImportance()); c != 0 {
			return c
		}
		if c := cmp.Compare(b.GetUpdatedUnixNano(), a.GetUpdatedUnixNano()); c != 0 {
			return c
		}
		return cmp.Compare(a.GetKey(), b.GetKey())
	})
	return all[:min(limit, len(all))], nil
}
