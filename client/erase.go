package client

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// eraseTimeout is the default bound of an erase: a user's covers every
// one of its sessions.
const eraseTimeout = 2 * time.Minute

// erase sends an EraseRequest (a command id is set when none is given, so
// a retry of the same call resumes the same removal).
func (c *Client) erase(ctx context.Context, subject, reason string) (*memoryv1.EraseReceipt, error) {
	req := &memoryv1.EraseRequest{Reason: reason}
	commandID(&req.CommandId)
	return c.eraseCall(ctx, subject, req)
}

// eraseCall sends an erase request and waits (eraseTimeout unless ctx has
// a deadline) for its receipt; later reads wait for the removal.
func (c *Client) eraseCall(ctx context.Context, subject string, req proto.Message) (*memoryv1.EraseReceipt, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, eraseTimeout)
		defer cancel()
	}
	reply := &memoryv1.EraseReceipt{}
	if err := c.call(ctx, subject, req, reply); err != nil {
		return reply, err
	}
	// Reads after it wait for the removal on any node (min_seq, and
	// the consistency tokens of what it wrote in each partition).
	c.recordSeq(reply.GetRemovalSeq())
	c.tokens.add(reply.GetConsistency())
	return reply, nil
}

// EraseSession erases session id and its session scope: once
// it answers, nothing of them is readable by any path. reason is kept,
// content-free, in the log.
func (c *Client) EraseSession(ctx context.Context, id, reason string) (*memoryv1.EraseReceipt, error) {
	return c.erase(ctx, subject(id, "erase"), reason)
}

// EraseUser erases every session of user id, the user:<id> scope and the
// values the user's sessions published into other scopes.
func (c *Client) EraseUser(ctx context.Context, id, reason string) (*memoryv1.EraseReceipt, error) {
	return c.erase(ctx, "mem.v1.user."+id+".erase", reason)
}

// EraseScope erases scope s (agent memory: Agent(id)).
func (c *Client) EraseScope(ctx context.Context, s Scope, reason string) (*memoryv1.EraseReceipt, error) {
	return c.erase(ctx, s.Subject("erase"), reason)
}

// EraseEntry erases key from scope s: every version, from the log, the
// snapshots and the read models (an entry delete with erase set), where
// DeleteEntry writes a tombstone that keeps the history.
func (c *Client) EraseEntry(ctx context.Context, s Scope, key, reason string) (*memoryv1.EraseReceipt, error) {
	req := &memoryv1.DeleteEntryRequest{Key: key, Erase: true, Reason: reason}
	commandID(&req.CommandId)
	return c.eraseCall(ctx, s.Subject("delete"), req)
}
