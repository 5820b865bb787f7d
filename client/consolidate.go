package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Consolidate extracts the facts of session id into long-term memory
// (mem.v1.session.<id>.consolidate); dryRun only reports them.
func (c *Client) Consolidate(ctx context.Context, id string, dryRun bool) (*memoryv1.ConsolidateReply, error) {
	reply := &memoryv1.ConsolidateReply{}
	return reply, c.call(ctx, subject(id, "consolidate"), &memoryv1.ConsolidateRequest{DryRun: dryRun}, reply)
}

// Conflicts lists the values waiting for review in scope
// (mem.v1.scope.<kind>.<id>.conflicts).
func (c *Client) Conflicts(ctx context.Context, scope Scope) ([]*memoryv1.Conflict, error) {
	reply := &memoryv1.ConflictsReply{}
	if err := c.call(ctx, scope.Subject("conflicts"), &memoryv1.ConflictsRequest{}, reply); err != nil {
		return nil, err
	}
	return reply.GetConflicts(), nil
}

// Settle takes (accept) or drops the value proposed for key in scope
// (mem.v1.scope.<kind>.<id>.settle).
func (c *Client) Settle(ctx context.Context, scope Scope, key string, accept bool) (*memoryv1.EntryReply, error) {
	req := &memoryv1.SettleConflictRequest{Key: key, Accept: accept}
	commandID(&req.CommandId)
	reply := &memoryv1.EntryReply{}
	return reply, c.write(ctx, scope.Subject("settle"), req, reply)
}

// ErrNoMarker is returned by AwaitConsolidation for a nil marker: the
// reply named none (consolidation off, or a session without a user or an
// agent to write to).
var ErrNoMarker = errors.New("agentmem: no consolidation marker to wait for")

// AwaitConsolidation waits until the consolidation a reply's marker names
// finished — a terminate's StatusReply.Consolidation, or a
// ConsolidateReply.Marker — and returns the marker entry (its value is
// JSON: session, seq, facts). The marker is written after every other
// entry of the run, so once it exists the session's facts, episodes and
// digest are in memory. It polls the marker every poll (0: 100 ms) until
// ctx ends.
func (c *Client) AwaitConsolidation(ctx context.Context, m *memoryv1.ConsolidationMarker, poll time.Duration) (*memoryv1.Entry, error) {
	if m == nil {
		return nil, ErrNoMarker
	}
	kind, id, ok := strings.Cut(m.GetScope(), ":")
	if !ok {
		return nil, fmt.Errorf("agentmem: consolidation marker scope %q: want kind:id", m.GetScope())
	}
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	scope := Scope{Kind: kind, ID: id}
	for {
		e, err := c.GetEntry(ctx, scope, m.GetKey(), 0)
		if err == nil {
			return e, nil
		}
		if Code(err) != 404 {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}
