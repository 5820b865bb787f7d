package swap

import (
	"hash/maphash"
	"strings"
	"sync"
)

// The stem cache. english.Stem is a pure function that costs a few
// microseconds and a dozen allocations a word, while the words of a corpus
// repeat a lot: stems caches word → stem. It is bounded (see doc.go):
// stemShards shards, each holding two generations of at most about
// stemGenBytes bytes; when the current generation of a shard is full it
// becomes the old one and the previous old one is dropped. A word found in
// the old generation is copied to the current one, so words in use stay.
const (
	stemShards   = 64
	stemGenBytes = 64 << 10
	// stemEntryOverhead approximates the memory of a map entry besides the
	// bytes of its strings: two string headers, the map slot and its share
	// of the map's spare capacity.
	stemEntryOverhead = 80
	// stemMaxKeyBytes: longer words are stemmed without the cache. Words
	// reaching the stemmer have at most maxWordBytes bytes anyway.
	stemMaxKeyBytes = maxWordBytes
)

var stems = newStemCache()

type stemCache struct {
	seed   maphash.Seed
	shards [stemShards]stemShard
}

type stemShard struct {
	mu       sync.RWMutex
	cur, old map[string]string
	curBytes int
	_        [64]byte // keep shards on separate cache lines
}

func newStemCache() *stemCache {
	c := &stemCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].cur = make(map[string]string)
	}
	return c
}

// stem returns stemWord(w).
func (c *stemCache) stem(w string) string {
	if len(w) > stemMaxKeyBytes {
		return stemWord(w)
	}
	sh := &c.shards[maphash.String(c.seed, w)%stemShards]
	sh.mu.RLock()
	t, ok := sh.cur[w]
	inOld := false
	if !ok {
		t, inOld = sh.old[w]
	}
	sh.mu.RUnlock()
	if ok {
		return t
	}
	w = strings.Clone(w) // w may be a substring of a large text
	if !inOld {
		t = stemWord(w)
	}
	sh.put(w, t)
	return t
}

// stemBytes returns stemWord(string(b)) without converting b to
// a string when the stem is cached.
func (c *stemCache) stemBytes(b []byte) string {
	if len(b) > stemMaxKeyBytes {
		return stemWord(string(b))
	}
	sh := &c.shards[maphash.Bytes(c.seed, b)%stemShards]
	sh.mu.RLock()
	t, ok := sh.cur[string(b)]
	inOld := false
	if !ok {
		t, inOld = sh.old[string(b)]
	}
	sh.mu.RUnlock()
	if ok {
		return t
	}
	w := string(b)
	if !inOld {
		t = stemWord(w)
	}
	sh.put(w, t)
	return t
}

// put records w → t in the current generation of the shard.
func (sh *stemShard) put(w, t string) {
	cost := len(w) + stemEntryOverhead
	if t != w {
		cost += len(t)
	} else {
		t = w // share the bytes
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.cur[w]; ok {
		return // another goroutine got there first
	}
	if sh.curBytes+cost > stemGenBytes {
		sh.old = sh.cur
		sh.cur = make(map[string]string, len(sh.old))
		sh.curBytes = 0
	}
	sh.cur[w] = t
	sh.curBytes += cost
}
