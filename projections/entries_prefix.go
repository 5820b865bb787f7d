package projections

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// EntriesWithPrefix returns at most limit live entries of one scope
// (aggregateKind is the log kind, as in Entry) whose key starts with
// prefix, in key order: a pattern library's current patterns
// (patterns/<library>/…). Tombstones and entries past their expiry are left
// out; values are the original bytes.
func (s *Store) EntriesWithPrefix(aggregateKind, scopeID, prefix string, limit int) ([]*memoryv1.Entry, error) {
	if err := validateScopeArgs(aggregateKind, scopeID, nil); err != nil {
		return nil, err
	}
	now := searchNow().UnixNano()
	var out []*memoryv1.Entry
	err := s.view(func(tx *bolt.Tx) error {
		p := entryKey(aggregateKind, scopeID, prefix)
		c := tx.Bucket(bucketEntries).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Next() {
			e, err := unmarshalPlain(v, k)
			if err != nil {
				return err
			}
			if e.GetDeleted() || (e.GetExpiresUnixNano() > 0 && e.GetExpiresUnixNano() <= now) {
				continue
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}
