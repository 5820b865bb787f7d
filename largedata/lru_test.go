package largedata

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"pgregory.net/rapid"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// ids lists the ids from most to least recently used.
func (c *lru) ids() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, c.order.Len())
	for el := c.order.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*lruEntry).id)
	}
	return out
}

// check verifies the lru invariants: byte accounting, the bound, and that
// the map and the list agree.
func (c *lru) check(t interface {
	Helper()
	Fatalf(string, ...any)
}) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum int64
	n := 0
	for el := c.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*lruEntry)
		if c.items[e.id] != el {
			t.Fatalf("lru: list entry %q not in the map", e.id)
		}
		sum += int64(len(e.data))
		n++
	}
	if n != len(c.items) {
		t.Fatalf("lru: %d list entries, %d map entries", n, len(c.items))
	}
	if sum != c.bytes {
		t.Fatalf("lru: bytes = %d, entries sum to %d", c.bytes, sum)
	}
	if c.bytes > c.max {
		t.Fatalf("lru: bytes %d above the bound %d", c.bytes, c.max)
	}
}

func ref(id string) *memoryv1.DataReference { return &memoryv1.DataReference{Id: id} }

func TestLRUEvictionOrder(t *testing.T) {
	c := newLRU(100)
	c.put("a", ref("a"), make([]byte, 30))
	c.put("b", ref("b"), make([]byte, 30))
	c.put("c", ref("c"), make([]byte, 30))
	c.check(t)
	if got := c.size(); got != 90 {
		t.Fatalf("size = %d, want 90", got)
	}
	// Touch a: b becomes the least recently used.
	if _, _, ok := c.get("a"); !ok {
		t.Fatal("a missing")
	}
	c.put("d", ref("d"), make([]byte, 30)) // 120 > 100: evicts b
	c.check(t)
	if got, want := c.ids(), []string{"d", "a", "c"}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	if _, _, ok := c.get("b"); ok {
		t.Fatal("b not evicted")
	}
	c.put("e", ref("e"), make([]byte, 70)) // evicts c, then a (LRU first)
	c.check(t)
	if got, want := c.ids(), []string{"e", "d"}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	if got := c.size(); got != 100 {
		t.Fatalf("size = %d, want 100", got)
	}
}

func TestLRUByteAccounting(t *testing.T) {
	c := newLRU(100)
	c.put("a", ref("a"), make([]byte, 40))
	c.put("a", ref("a"), make([]byte, 10)) // replace: 40 out, 10 in
	c.check(t)
	if got := c.size(); got != 10 {
		t.Fatalf("size after replace = %d, want 10", got)
	}
	c.put("big", ref("big"), make([]byte, 101)) // bigger than the bound: not cached
	c.check(t)
	if _, _, ok := c.get("big"); ok {
		t.Fatal("entry bigger than the bound was cached")
	}
	if got := c.size(); got != 10 {
		t.Fatalf("size after oversize put = %d, want 10 (nothing evicted)", got)
	}
	c.put("a", ref("a"), make([]byte, 101)) // oversize replacement drops the old entry
	c.check(t)
	if _, _, ok := c.get("a"); ok || c.size() != 0 {
		t.Fatalf("oversize replacement kept a (size %d)", c.size())
	}
	c.put("x", ref("x"), make([]byte, 100)) // exactly the bound fits
	c.remove("x")
	c.remove("x")
	c.check(t)
	if c.size() != 0 {
		t.Fatalf("size after remove = %d", c.size())
	}
}

func TestLRUDisabled(t *testing.T) {
	c := newLRU(0)
	c.put("a", ref("a"), []byte{1})
	c.put("empty", ref("empty"), nil) // 0 bytes fits a 0 bound; harmless
	c.check(t)
	if _, _, ok := c.get("a"); ok {
		t.Fatal("disabled tier cached a")
	}
}

// TestLRUModel compares the lru with a naive reference: a slice ordered by
// recency, evicting from the end. rapid prints the failing seed.
func TestLRUModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		max := rapid.Int64Range(0, 64).Draw(rt, "max")
		c := newLRU(max)
		type ent struct {
			id   string
			size int
		}
		var model []ent // most recent first
		find := func(id string) int {
			return slices.IndexFunc(model, func(e ent) bool { return e.id == id })
		}
		for range rapid.IntRange(1, 100).Draw(rt, "ops") {
			id := fmt.Sprint(rapid.IntRange(0, 8).Draw(rt, "id"))
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				size := rapid.IntRange(0, 40).Draw(rt, "size")
				c.put(id, ref(id), make([]byte, size))
				if i := find(id); i >= 0 {
					model = slices.Delete(model, i, i+1)
				}
				if int64(size) <= max {
					model = slices.Insert(model, 0, ent{id, size})
					total := 0
					for _, e := range model {
						total += e.size
					}
					for int64(total) > max {
						total -= model[len(model)-1].size
						model = model[:len(model)-1]
					}
				}
			case 1:
				_, data, ok := c.get(id)
				i := find(id)
				if ok != (i >= 0) {
					rt.Fatalf("get(%s) ok=%v, model has it: %v", id, ok, i >= 0)
				}
				if ok {
					if len(data) != model[i].size {
						rt.Fatalf("get(%s) %d bytes, model %d", id, len(data), model[i].size)
					}
					e := model[i]
					model = slices.Insert(slices.Delete(model, i, i+1), 0, e)
				}
			case 2:
				c.remove(id)
				if i := find(id); i >= 0 {
					model = slices.Delete(model, i, i+1)
				}
			}
			c.check(rt)
			want := make([]string, len(model))
			for i, e := range model {
				want[i] = e.id
			}
			if got := c.ids(); !slices.Equal(got, want) {
				rt.Fatalf("order %v, model %v", got, want)
			}
		}
	})
}

func TestLRUConcurrent(t *testing.T) {
	c := newLRU(1 << 10)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				id := fmt.Sprint((g*7 + i) % 50)
				switch i % 3 {
				case 0:
					c.put(id, ref(id), make([]byte, i%100))
				case 1:
					c.get(id)
				case 2:
					if i%10 == 0 {
						c.remove(id)
					}
				}
			}
		})
	}
	wg.Wait()
	c.check(t)
}
