package segmented

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// A memory item names its entry's key by digest (MemoryItem.key_sha256,
// the SHA-256 an erase names an entry by): a key may be made of the
// user's words, and an erased entry must leave none of them in the
// contexts that showed it. The key is read from the scope when the
// context is read (Sources.Key; time travel reads the scope's log);
// items written before carry the key itself, and still read.

// KeySum is the SHA-256 of key, as a memory item records it.
func KeySum(key string) []byte {
	s := sha256.Sum256([]byte(key))
	return s[:]
}

// ItemKeySum is the digest of memory item m's key: its key_sha256, or the
// SHA-256 of the key an item written before (or a candidate) carries.
func ItemKeySum(m *memoryv1.MemoryItem) []byte {
	if s := m.GetKeySha256(); len(s) > 0 {
		return s
	}
	return KeySum(m.GetKey())
}

// keyNameDigits is how many hex digits of the digest name a key that
// cannot be read: enough to tell a context's items apart.
const keyNameDigits = 12

// KeyName is how a context names the key of item m: key when it was read
// from the scope, else the key an item written before carries, else "#"
// and the first hex digits of its digest (an erased key is known by it
// alone).
func KeyName(m *memoryv1.MemoryItem, key string) string {
	switch {
	case key != "":
		return key
	case m.GetKey() != "":
		return m.GetKey()
	}
	h := hex.EncodeToString(m.GetKeySha256())
	return "#" + h[:min(len(h), keyNameDigits)]
}

// MemoryID is the id of the context message of memory item m whose key
// reads key ("" when it cannot be read: KeyName).
func MemoryID(m *memoryv1.MemoryItem, key string) string {
	return "memory:" + m.GetScope() + "/" + KeyName(m, key)
}

// sameMemoryItem reports whether x and y record the same item, an item
// written before (key) and one written since (key_sha256) alike: the
// sections are then the same, and no event is written.
func sameMemoryItem(x, y *memoryv1.MemoryItem) bool {
	if (x.GetKey() == "") == (y.GetKey() == "") {
		return proto.Equal(x, y)
	}
	return bytes.Equal(ItemKeySum(x), ItemKeySum(y)) && proto.Equal(withoutKey(x), withoutKey(y))
}

// withoutKey is m without its key and its digest.
func withoutKey(m *memoryv1.MemoryItem) *memoryv1.MemoryItem {
	c := proto.CloneOf(m)
	c.Key, c.KeySha256 = "", nil
	return c
}
