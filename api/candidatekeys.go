package api

import (
	"sync"

	"github.com/agentmem/agentmem/internal/segmented"
)

// maxCandidateKeys bounds the sessions whose candidate key a node
// remembers; past it the memory starts over.
const maxCandidateKeys = 1 << 16

// candidateKeyCache remembers, by session id, the key the session's actor
// last asked its appends' candidates to be searched for. It is only a
// hint: the actor checks the key of every append (see appendChecked), so
// an entry made stale by a compression, a re-created session or a
// partition served elsewhere in the meantime costs one more search, never
// a wrong one.
type candidateKeyCache struct {
	mu sync.Mutex
	m  map[string]segmented.CandidateKey
}

func (c *candidateKeyCache) get(id string) (segmented.CandidateKey, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[id]
	return k, ok
}

func (c *candidateKeyCache) put(id string, k segmented.CandidateKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCandidateKeys {
		c.m = make(map[string]segmented.CandidateKey)
	}
	c.m[id] = k
}
