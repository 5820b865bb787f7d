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
	ctx, cancel := context.WithTimeout(context.Background(), c.dir.cfg.StoreTimeout)
	defer cancel()
	r, ok, err := idx.LookupCommand(ctx, c.mk.kind, c.id, key, oldest-1)
	if err != nil {
		c.dir.deps.Metrics.StoreFailures.Inc()
		return nil, false, fmt.Errorf("%w: %v", ErrIndexUnavailable, err)
	}
	return r, ok, nil
}
