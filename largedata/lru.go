package largedata

import (
	"container/list"
	"sync"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// lru is the in-memory tier: original bytes by id, bounded by the sum of
// len(data), least recently used evicted first. get and put are O(1).
//
// Invariant (checked by lru.check in tests): bytes == sum of len(data) over
// the entries, bytes <= max, and items and order hold the same ids.
//
// Entries are immutable once inserted: get hands out the stored slice and
// the Store copies it before returning it to a caller.
type lru struct {
	max int64 // 0: the tier is disabled

	mu    sync.Mutex // guards the fields below
	items map[string]*list.Element
	order *list.List // of *lruEntry, most recently used at the front
	bytes int64
}

type lruEntry struct {
	id   string
	ref  *memoryv1.DataReference
	data []byte
}

func newLRU(maxBytes int64) *lru {
	return &lru{max: maxBytes, items: make(map[string]*list.Element), order: list.New()}
}

// get returns the entry of id and marks it most recently used.
func (c *lru) get(id string) (*memoryv1.DataReference, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[id]
	if !ok {
		return nil, nil, false
	}
	c.order.MoveToFront(el)
	e := el.Value.(*lruEntry)
	return e.ref, e.data, true
}

// put inserts or replaces id, then evicts from the back until the bound
// holds. Data bigger than the whole bound is not cached (and drops a
// previous entry of id). put keeps data: the caller must not modify it.
func (c *lru) put(id string, ref *memoryv1.DataReference, data []byte) {
	size := int64(len(data))
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		c.removeLocked(el)
	}
	if size > c.max {
		return
	}
	c.items[id] = c.order.PushFront(&lruEntry{id: id, ref: ref, data: data})
	c.bytes += size
	for c.bytes > c.max {
		c.removeLocked(c.order.Back())
	}
}

// remove drops id if present.
func (c *lru) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		c.removeLocked(el)
	}
}

func (c *lru) removeLocked(el *list.Element) {
	e := c.order.Remove(el).(*lruEntry)
	delete(c.items, e.id)
	c.bytes -= int64(len(e.data))
}

// size is the current number of bytes held.
func (c *lru) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
