package actors

import (
	"context"
	"fmt"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// CommandIndex is the durable index of every command stored in the log, by
// aggregate and command key (events.CommandKey: the writer-scoped command
// id). The
// node serves it from its projection.
type CommandIndex interface {
	// LookupCommand returns the result of command key on aggregate kind/id.
	// It first waits, bounded by ctx, until the index covers every stream
	// sequence up to covered; a wait that times out is an error, never a
	// "not found".
	LookupCommand(ctx context.Context, kind, id, key string, covered uint64) (*memoryv1.CommandResult, bool, error)
}

// lookupCommand finds key among the commands the aggregate stored: first in
// the model's window of recent commands; when the aggregate stored more than
// the window holds, in the command index, which must then cover every
// sequence before the window's oldest command. A command id is thus answered
// as a duplicate whatever its age and however many commands followed it.
//
// Without an index (a node running without a projector) only the window is
// searched: the documented bound is the last 64 commands per aggregate.
func (c *core) lookupCommand(key string) (*memoryv1.CommandResult, bool, error) {
	if r, ok := c.m.LookupCommand(key); ok {
		return r, true, nil
	}
	oldest, complete := c.m.CommandWindow()
	idx := c.dir.deps.Commands
	if complete || idx == nil {
		return nil, false, nil
	}
	if r, ok := c.ring.lookup(key); ok {
		return r, true, nil
	}
	// What memory can answer reaches back to the older of the window's and
	// the ring's oldest command: the index must cover what is before it.
	if ro := c.ring.oldest(); ro != 0 && ro < oldest {
		oldest = ro
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.dir.cfg.StoreTimeout)
	defer cancel()
	r, ok, err := idx.LookupCommand(ctx, c.mk.kind, c.id, key, oldest-1)
	if err != nil {
		c.dir.deps.Metrics.StoreFailures.Inc()
		return nil, false, fmt.Errorf("%w: %v", ErrIndexUnavailable, err)
	}
	return r, ok, nil
}

// ringSize is how many command keys an active actor remembers (memory
// only, 24 bytes each, grown as the aggregate applies commands).
const ringSize = 512

// commandRing is a memory-only ring of the last ringSize command keys an
// actor applied since its activation (replayed tail included), by 64-bit
// FNV-1a hash. It lets a new command skip waiting for the projection's
// command index to cover the model's small window: the index is needed
// only for what is older than the ring. A hash match answers duplicate
// (64-bit: a false match needs ~2^32 keys in one aggregate's ring).
type commandRing struct {
	hashes  []uint64
	results []ringResult
	next    int // where the next key goes once the ring is full
}

type ringResult struct{ version, seq uint64 }

func ringHash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h
}

// add records key, applied at version and seq.
func (r *commandRing) add(key string, version, seq uint64) {
	if key == "" {
		return
	}
	if len(r.hashes) < ringSize {
		// Grows with the aggregate: a short session holds a short ring.
		r.hashes, r.results = append(r.hashes, ringHash(key)), append(r.results, ringResult{version, seq})
		r.next = len(r.hashes) % ringSize
		return
	}
	r.hashes[r.next], r.results[r.next] = ringHash(key), ringResult{version, seq}
	r.next = (r.next + 1) % ringSize
}

// lookup finds key among the remembered commands.
func (r *commandRing) lookup(key string) (*memoryv1.CommandResult, bool) {
	n := len(r.hashes)
	if n == 0 {
		return nil, false
	}
	h := ringHash(key)
	for i := 0; i < n; i++ {
		j := (r.next - 1 - i + 2*ringSize) % len(r.hashes)
		if r.hashes[j] == h {
			res := r.results[j]
			return &memoryv1.CommandResult{CommandId: key, Version: res.version, Seq: res.seq}, true
		}
	}
	return nil, false
}

// oldest is the sequence of the oldest remembered command (0: none).
func (r *commandRing) oldest() uint64 {
	if len(r.results) == 0 {
		return 0
	}
	if len(r.results) < ringSize {
		return r.results[0].seq
	}
	return r.results[r.next].seq
}
