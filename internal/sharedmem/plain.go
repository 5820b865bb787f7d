package sharedmem

import (
	"bytes"
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// MaxPlainCacheBytes bounds the original bytes a State keeps of its
// compressed current values (plainCache): the memory an active scope may
// hold beyond its stored values (40 values of 100 KB). Past it the cache
// starts over.
const MaxPlainCacheBytes = 4 << 20

// plainCache keeps the original bytes of compressed current versions, so a
// get of a value in the memory tier answers without decompressing it again.
// It is filled by reads (the first get decodes) and by the decision that
// compressed a value (Apply takes the original bytes when the batch stores
// the same compressed bytes), and a key's entry is dropped when the key
// gets a new version. It is never part of the snapshot.
type plainCache struct {
	values map[string]plainValue
	bytes  int
	// fresh is the value the last decision compressed (key "" = none).
	fresh struct {
		key    string
		stored []byte
		value  []byte
	}
}

type plainValue struct {
	version uint64
	value   []byte
}

// put caches the original bytes of key's current version.
func (c *plainCache) put(key string, version uint64, value []byte) {
	if c.values == nil || c.bytes+len(value) > MaxPlainCacheBytes {
		c.values, c.bytes = map[string]plainValue{}, 0
	}
	c.drop(key)
	c.values[key] = plainValue{version: version, value: value}
	c.bytes += len(value)
}

func (c *plainCache) drop(key string) {
	if old, ok := c.values[key]; ok {
		c.bytes -= len(old.value)
		delete(c.values, key)
	}
}

// remember records that a decision stored value (its original bytes, owned
// by the cache) as stored for key.
func (s *State) remember(key string, v storedValue, value []byte) {
	if v.compressed {
		s.cache.fresh.key, s.cache.fresh.stored, s.cache.fresh.value = key, v.bytes, value
	}
}

// cacheApplied updates the cache for e, just applied as its key's current
// version.
func (s *State) cacheApplied(e *memoryv1.Entry) {
	s.cache.drop(e.Key)
	f := &s.cache.fresh
	if f.key == e.Key && e.Compressed && bytes.Equal(f.stored, e.Value) {
		s.cache.put(e.Key, e.Version, f.value)
		f.key, f.stored, f.value = "", nil, nil
	}
}

// plain is Plain for an entry of s, through the cache when e is its key's
// current version.
func (s *State) plain(e *memoryv1.Entry) (*memoryv1.Entry, error) {
	if !e.GetCompressed() || s.current(e.Key) != e {
		return Plain(e)
	}
	v, ok := s.cache.values[e.Key]
	if !ok || v.version != e.Version {
		value, err := DecodeValue(e)
		if err != nil {
			return nil, err
		}
		v = plainValue{version: e.Version, value: value}
		s.cache.put(e.Key, e.Version, value)
	}
	c := proto.Clone(e).(*memoryv1.Entry)
	c.Value, c.Compressed = slices.Clone(v.value), false
	return c, nil
}
