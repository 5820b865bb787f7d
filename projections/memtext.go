package projections

import (
	"fmt"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// EntryText returns the value of version of key in the scope a context's
// memory item names (scope "<kind>:<id>", or "global"), as text: the
// segmented.EntryText the node hydrates contexts with (the log
// keeps which entry version a context showed, not its text). ok is false
// when the projection does not hold that version (erased, or never
// projected), it is a tombstone, or its value is not text.
func (s *Store) EntryText(scope, key string, version uint64) (string, bool) {
	kind, id, err := sharedmem.ParseScopeName(scope)
	if err != nil {
		return "", false
	}
	aggKind := ScopeLogKind(kind)
	if validateScopeArgs(aggKind, id, &key) != nil {
		return "", false
	}
	var out string
	ok := false
	_ = s.view(func(tx *bolt.Tx) error {
		k := entryVersionKey(aggKind, id, key, version)
		v := tx.Bucket(bucketEntryVersions).Get(k)
		if v == nil {
			return nil
		}
		e := new(memoryv1.Entry)
		if proto.Unmarshal(v, e) != nil || e.GetDeleted() {
			return nil
		}
		value, err := sharedmem.DecodeValue(e) // the stored bytes, decompressed if need be
		if err != nil || !utf8.Valid(value) {
			return nil
		}
		out, ok = string(value), true
		return nil
	})
	return out, ok
}

// EntryRef names an entry of a scope.
type EntryRef struct {
	Kind sharedmem.Kind
	ID   string
	Key  string
}

// EntriesWithMetadata returns the entries (keys of scopes) any version of
// which the projection holds carries metadata name = value, in key order:
// a user erase finds the copies its user's sessions published (api).
// It reads every entry version.
func (s *Store) EntriesWithMetadata(name, value string) ([]EntryRef, error) {
	kinds := map[string]sharedmem.Kind{}
	for _, k := range sharedmem.Kinds() {
		kinds[ScopeLogKind(k)] = k
	}
	var out []EntryRef
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEntryVersions).ForEach(func(k, v []byte) error {
			e := new(memoryv1.Entry)
			if err := proto.Unmarshal(v, e); err != nil {
				return fmt.Errorf("projections: stored entry %q: %w", k, err)
			}
			if e.GetMetadata()[name] != value {
				return nil
			}
			parts := strings.SplitN(string(k), "\x00", 3)
			if len(parts) != 3 {
				return nil
			}
			ref := EntryRef{Kind: kinds[parts[0]], ID: parts[1], Key: e.GetKey()}
			if n := len(out); ref.Kind != "" && (n == 0 || out[n-1] != ref) {
				out = append(out, ref)
			}
			return nil
		})
	})
	return out, err
}

// DataOwnedBy returns the ids of the large data the projection holds for
// owner (DataReference.owner, e.g. "session:<id>"), in id order. It reads
// every reference.
func (s *Store) DataOwnedBy(owner string) ([]string, error) {
	var out []string
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDataRefs).ForEach(func(k, v []byte) error {
			ref := new(memoryv1.DataReference)
			if err := proto.Unmarshal(v, ref); err != nil {
				return fmt.Errorf("projections: data ref %q: %w", k, err)
			}
			if ref.GetOwner() == owner {
				out = append(out, string(k))
			}
			return nil
		})
	})
	return out, err
}
