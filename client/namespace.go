package client

import (
	"context"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Namespace operations: a scope's memories managed as a unit (the owner's
// or an admin's).

// Archive archives scope's live entries of req.MemoryType (episodic when
// unspecified) last updated req.OlderThanDays ago or more: tombstones that
// keep their values (Restore brings one back). At most 1000 per call:
// call again while the reply's More is set. A dry run reports the keys.
func (c *Client) Archive(ctx context.Context, scope Scope, req *memoryv1.ArchiveEntriesRequest) (*memoryv1.ArchiveEntriesReply, error) {
	reply := &memoryv1.ArchiveEntriesReply{}
	if req.GetDryRun() {
		return reply, c.call(ctx, scope.Subject("archive"), req, reply)
	}
	commandID(&req.CommandId)
	return reply, c.write(ctx, scope.Subject("archive"), req, reply)
}

// Restore brings back an archived or deleted entry of scope as a new
// version: its archived value, or req.Version's content, or its newest
// live version.
func (c *Client) Restore(ctx context.Context, scope Scope, req *memoryv1.RestoreEntryRequest) (*memoryv1.EntryReply, error) {
	commandID(&req.CommandId)
	reply := &memoryv1.EntryReply{}
	return reply, c.write(ctx, scope.Subject("restore"), req, reply)
}

// ExportPage reads one page of scope's keys with their kept versions.
func (c *Client) ExportPage(ctx context.Context, scope Scope, req *memoryv1.ExportEntriesRequest) (*memoryv1.ExportEntriesReply, error) {
	reply := &memoryv1.ExportEntriesReply{}
	return reply, c.call(ctx, scope.Subject("export"), req, reply)
}

// Export reads every page of scope's keys, calling page for each.
func (c *Client) Export(ctx context.Context, scope Scope, prefix string, page func(*memoryv1.ExportEntriesReply) error) error {
	token := ""
	for {
		rep, err := c.ExportPage(ctx, scope, &memoryv1.ExportEntriesRequest{Prefix: prefix, PageToken: token})
		if err != nil {
			return err
		}
		if err := page(rep); err != nil {
			return err
		}
		if token = rep.GetNextPageToken(); token == "" {
			return nil
		}
	}
}

// Import writes req.Keys (an export's, at most 500) into scope. Without a
// command id the node derives one from the content and the scope, so the
// same import sent twice is stored once; a key already holding the same
// content is unchanged. A dry run reports what would change.
func (c *Client) Import(ctx context.Context, scope Scope, req *memoryv1.ImportEntriesRequest) (*memoryv1.ImportEntriesReply, error) {
	reply := &memoryv1.ImportEntriesReply{}
	if req.GetDryRun() {
		return reply, c.call(ctx, scope.Subject("import"), req, reply)
	}
	return reply, c.write(ctx, scope.Subject("import"), req, reply)
}
