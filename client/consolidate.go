package client

import (
	"context"

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
