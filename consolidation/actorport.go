package consolidation

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// ScopeActors hands a command to the owner of a scope (actors.Directory,
// or the node's placed dispatcher).
type ScopeActors interface {
	DispatchScope(kind sharedmem.Kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error
}

// SessionActors hands a command to the owner of a session.
type SessionActors interface {
	Dispatch(sessionID string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error
}

// ReadModel is what the port reads of the projection.
type ReadModel interface {
	WaitFor(ctx context.Context, seq uint64) error
	Recall(sessionID string, offset, limit int) ([]*memoryv1.Message, uint64, error)
	ListSessions(req *memoryv1.ListSessionsRequest) ([]*memoryv1.SessionIndexEntry, string, error)
}

// ActorPort is Scopes and Sessions over the actors and the read model: the
// scope and session actors reached as the node itself (nil caller: the
// operation that started a run checked its caller), every write through
// the scope's owner.
type ActorPort struct {
	Scopes   ScopeActors
	Sessions SessionActors
	Read     ReadModel
	// MaxRecall bounds one page of Messages (the read model's recall limit).
	MaxRecall int
}

var (
	_ Scopes   = ActorPort{}
	_ Sessions = ActorPort{}
)

// portErr marks a 404 ErrNotFound and a 409 ErrConflict, keeping err (a
// rejection of the actors, which says its code by Status).
func portErr(err error) error {
	var rej interface{ Status() (int, string, string) }
	if err == nil || !errors.As(err, &rej) {
		return err
	}
	switch code, _, _ := rej.Status(); code {
	case 404:
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case 409:
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

func (p ActorPort) scope(ctx context.Context, t Scope, body any) (proto.Message, error) {
	m, err := actors.Await(ctx, func(reply actors.ReplyFunc) error {
		return p.Scopes.DispatchScope(t.Kind, t.ID, nil, body, reply)
	})
	return m, portErr(err)
}

func (p ActorPort) Get(ctx context.Context, t Scope, key string) (*memoryv1.Entry, error) {
	m, err := p.scope(ctx, t, &memoryv1.GetEntryRequest{Key: key})
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.EntryReply).GetEntry(), nil
}

func (p ActorPort) History(ctx context.Context, t Scope, key string) ([]*memoryv1.Entry, error) {
	m, err := p.scope(ctx, t, &memoryv1.HistoryRequest{Key: key})
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.HistoryReply).GetVersions(), nil
}

func (p ActorPort) List(ctx context.Context, t Scope, prefix, token string) ([]*memoryv1.Entry, string, error) {
	m, err := p.scope(ctx, t, &memoryv1.ListEntriesRequest{Prefix: prefix, Limit: sharedmem.MaxListLimit, PageToken: token})
	if err != nil {
		return nil, "", err
	}
	r := m.(*memoryv1.ListEntriesReply)
	return r.GetEntries(), r.GetNextPageToken(), nil
}

func (p ActorPort) Put(ctx context.Context, t Scope, req *memoryv1.PutEntryRequest) (*memoryv1.EntryReply, error) {
	m, err := p.scope(ctx, t, req)
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.EntryReply), nil
}

func (p ActorPort) Delete(ctx context.Context, t Scope, req *memoryv1.DeleteEntryRequest) (*memoryv1.EntryReply, error) {
	m, err := p.scope(ctx, t, req)
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.EntryReply), nil
}

func (p ActorPort) Config(ctx context.Context, t Scope) (*memoryv1.ScopeConfig, error) {
	m, err := p.scope(ctx, t, actors.ReadScopeConfig{})
	if err != nil {
		return nil, err
	}
	return m.(*memoryv1.ConfigureScopeReply).GetConfig(), nil
}

// Info reads the session as its actor holds it.
func (p ActorPort) Info(ctx context.Context, id string) (*memoryv1.SessionInfo, error) {
	m, err := actors.Await(ctx, func(reply actors.ReplyFunc) error {
		return p.Sessions.Dispatch(id, nil, &memoryv1.GetSessionRequest{}, reply)
	})
	if err != nil {
		return nil, portErr(err)
	}
	return m.(*memoryv1.GetSessionReply).GetSession(), nil
}

func (p ActorPort) WaitFor(ctx context.Context, seq uint64) error { return p.Read.WaitFor(ctx, seq) }

func (p ActorPort) Messages(_ context.Context, id string, offset, limit int) ([]*memoryv1.Message, error) {
	page, _, err := p.Read.Recall(id, offset, min(limit, p.MaxRecall))
	return page, err
}

func (p ActorPort) Terminated(_ context.Context, token string) ([]*memoryv1.SessionIndexEntry, string, error) {
	return p.Read.ListSessions(&memoryv1.ListSessionsRequest{Status: memoryv1.SessionStatus_SESSION_STATUS_TERMINATED, Limit: 100, PageToken: token})
}
