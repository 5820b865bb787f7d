package client

import (
	"context"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Scope names one memory scope: an agent's private memory or a shared scope.
// Build one with Agent, Global, Workflow, Swarm, Debate,
// SessionScope, User, App, Project or AgentType.
type Scope struct {
	// Kind is "agent", "global", "workflow", "swarm", "debate", "session",
	// "user", "app", "project" or "agent_type".
	Kind string
	// ID is the scope's id ("global" for the global scope).
	ID string
}

// Agent is agent id's private scope, served on mem.v1.agent.<id>.<op>.
func Agent(id string) Scope { return Scope{Kind: "agent", ID: id} }

// Global is the one global scope.
func Global() Scope { return Scope{Kind: "global", ID: "global"} }

// Workflow is the scope workflow:<id>.
func Workflow(id string) Scope { return Scope{Kind: "workflow", ID: id} }

// Swarm is the scope swarm:<id>.
func Swarm(id string) Scope { return Scope{Kind: "swarm", ID: id} }

// Debate is the scope debate:<id>.
func Debate(id string) Scope { return Scope{Kind: "debate", ID: id} }

// SessionScope is the scope session:<id> (entries shared by that session's
// agents; not the session's conversation memory).
func SessionScope(id string) Scope { return Scope{Kind: "session", ID: id} }

// User is the scope user:<id>.
func User(id string) Scope { return Scope{Kind: "user", ID: id} }

// App is the scope app:<name> (writes need an elevated caller).
func App(name string) Scope { return Scope{Kind: "app", ID: name} }

// Project is the scope project:<id> (writes need an elevated caller).
func Project(id string) Scope { return Scope{Kind: "project", ID: id} }

// AgentType is the scope agent_type:<type>, shared by every agent of the
// type (with tenants: the principals whose agent_type it is).
func AgentType(name string) Scope { return Scope{Kind: "agent_type", ID: name} }

// String is "<kind>:<id>", or "global".
func (s Scope) String() string {
	if s.Kind == "global" {
		return "global"
	}
	return s.Kind + ":" + s.ID
}

// Subject is the request subject of op ("put", "get", ...) on s:
// mem.v1.agent.<id>.<op> for an agent, mem.v1.scope.<kind>.<id>.<op> otherwise.
func (s Scope) Subject(op string) string {
	if s.Kind == "agent" {
		return "mem.v1.agent." + s.ID + "." + op
	}
	return "mem.v1.scope." + s.Kind + "." + s.ID + "." + op
}

// WatchFilter is the log subject of s's changes, for Watch:
// mem.ev.<kind>.<id>, where the session scope's log kind is "session_scope"
// (mem.ev.session.<id> is the session's conversation).
func (s Scope) WatchFilter() string {
	if s.Kind == "session" {
		return WatchScope("session_scope", s.ID)
	}
	return WatchScope(s.Kind, s.ID)
}

// Put writes a new version of req.Key in scope. A nil ExpectedVersion writes
// whatever the current version; 0 requires the key not to be live; N is a
// compare-and-set (409 otherwise). A fresh command id is set when empty.
func (c *Client) Put(ctx context.Context, scope Scope, req *memoryv1.PutEntryRequest) (*memoryv1.EntryReply, error) {
	commandID(&req.CommandId)
	reply := &memoryv1.EntryReply{}
	return reply, c.write(ctx, scope.Subject("put"), req, reply)
}

// GetEntry returns the current live version of key (version 0) or the given
// version (tombstones included). Missing keys are a 404 *Error.
func (c *Client) GetEntry(ctx context.Context, scope Scope, key string, version uint64) (*memoryv1.Entry, error) {
	reply := &memoryv1.EntryReply{}
	if err := c.call(ctx, scope.Subject("get"), &memoryv1.GetEntryRequest{Key: key, Version: version}, reply); err != nil {
		return nil, err
	}
	return reply.GetEntry(), nil
}

// DeleteEntry writes a tombstone version of req.Key (a soft delete). An
// erase (req.Erase) is EraseEntry's: its reply is a receipt.
func (c *Client) DeleteEntry(ctx context.Context, scope Scope, req *memoryv1.DeleteEntryRequest) (*memoryv1.EntryReply, error) {
	if req.GetErase() {
		return nil, &Error{Code: 400, Field: "erase", Message: "use EraseEntry: an erase answers a receipt"}
	}
	commandID(&req.CommandId)
	reply := &memoryv1.EntryReply{}
	return reply, c.write(ctx, scope.Subject("delete"), req, reply)
}

// Rollback makes the content of version req.ToVersion of req.Key a new
// current version.
func (c *Client) Rollback(ctx context.Context, scope Scope, req *memoryv1.RollbackEntryRequest) (*memoryv1.EntryReply, error) {
	commandID(&req.CommandId)
	reply := &memoryv1.EntryReply{}
	return reply, c.write(ctx, scope.Subject("rollback"), req, reply)
}

// ListEntries lists the current versions in scope, sorted by key, one page
// at a time (req may be nil: the first 100 live entries).
func (c *Client) ListEntries(ctx context.Context, scope Scope, req *memoryv1.ListEntriesRequest) (*memoryv1.ListEntriesReply, error) {
	if req == nil {
		req = &memoryv1.ListEntriesRequest{}
	}
	reply := &memoryv1.ListEntriesReply{}
	return reply, c.call(ctx, scope.Subject("list"), req, reply)
}

// History returns every kept version of key, oldest first, tombstones included.
func (c *Client) History(ctx context.Context, scope Scope, key string) ([]*memoryv1.Entry, error) {
	reply := &memoryv1.HistoryReply{}
	if err := c.call(ctx, scope.Subject("history"), &memoryv1.HistoryRequest{Key: key}, reply); err != nil {
		return nil, err
	}
	return reply.GetVersions(), nil
}

// SearchEntries ranks scope's entries by BM25 for req.Query. A zero MinSeq
// and an empty Consistency wait for this client's writes, so a client
// finds what it wrote.
func (c *Client) SearchEntries(ctx context.Context, scope Scope, req *memoryv1.SearchEntriesRequest) (*memoryv1.SearchEntriesReply, error) {
	reply := &memoryv1.SearchEntriesReply{}
	return reply, c.callAfter(ctx, scope.Subject("search"), req, reply, req.MinSeq, req.Consistency,
		func(seq uint64, token string) { req.MinSeq, req.Consistency = seq, token })
}

// Configure bounds scope (max live entries) and sets its episodic TTL.
func (c *Client) Configure(ctx context.Context, scope Scope, req *memoryv1.ConfigureScopeRequest) (*memoryv1.ConfigureScopeReply, error) {
	commandID(&req.CommandId)
	reply := &memoryv1.ConfigureScopeReply{}
	return reply, c.write(ctx, scope.Subject("configure"), req, reply)
}

// Resolve looks key up for session sessionID in temp > session > user > app
// > project; the reply names the scope that held it (Found false: none).
func (c *Client) Resolve(ctx context.Context, sessionID, key string) (*memoryv1.ResolveReply, error) {
	reply := &memoryv1.ResolveReply{}
	return reply, c.call(ctx, SessionScope(sessionID).Subject("resolve"), &memoryv1.ResolveRequest{Key: key}, reply)
}

// Publish copies key from the session scope of sessionID into the session's
// user scope (target "user") or project scope (target "project").
func (c *Client) Publish(ctx context.Context, sessionID, key, target string) (*memoryv1.EntryReply, error) {
	req := &memoryv1.PublishRequest{Key: key, Target: target}
	commandID(&req.CommandId)
	reply := &memoryv1.EntryReply{}
	return reply, c.write(ctx, SessionScope(sessionID).Subject("publish"), req, reply)
}
