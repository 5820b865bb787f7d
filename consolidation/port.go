package consolidation

import (
	"context"
	"errors"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Scope names a memory scope: its kind and id ("user:u1").
type Scope struct {
	Kind sharedmem.Kind
	ID   string
}

func (s Scope) String() string { return string(s.Kind) + ":" + s.ID }

// Scopes is what a run needs of the scope actors: every entry is read
// and written through the scope's owner, never around it. ActorPort
// implements it over the actors.
type Scopes interface {
	// Get returns key's current entry (a deleted one included); an error
	// wrapping ErrNotFound when the key never existed.
	Get(ctx context.Context, s Scope, key string) (*memoryv1.Entry, error)
	// History returns every version of key, oldest first.
	History(ctx context.Context, s Scope, key string) ([]*memoryv1.Entry, error)
	// List returns one page of the live and deleted entries under prefix,
	// and the token of the next page ("" at the end).
	List(ctx context.Context, s Scope, prefix, pageToken string) ([]*memoryv1.Entry, string, error)
	// Put writes an entry; an error wrapping ErrConflict when its
	// expected version is not the key's.
	Put(ctx context.Context, s Scope, req *memoryv1.PutEntryRequest) (*memoryv1.EntryReply, error)
	// Delete deletes an entry (its history keeps it); ErrConflict as Put.
	Delete(ctx context.Context, s Scope, req *memoryv1.DeleteEntryRequest) (*memoryv1.EntryReply, error)
	// Config returns the scope's configuration.
	Config(ctx context.Context, s Scope) (*memoryv1.ScopeConfig, error)
}

// Sessions is what a run needs of the sessions: their owners (the
// session actors) and the read model.
type Sessions interface {
	// Info returns the session as its actor holds it (an error wrapping
	// ErrNotFound when there is none).
	Info(ctx context.Context, id string) (*memoryv1.SessionInfo, error)
	// WaitFor returns once the read model applied stream sequence seq.
	WaitFor(ctx context.Context, seq uint64) error
	// Messages returns up to limit of the session's messages from offset,
	// oldest first, from the read model.
	Messages(ctx context.Context, id string, offset, limit int) ([]*memoryv1.Message, error)
	// Terminated returns one page of the terminated sessions of the read
	// model and the token of the next ("" at the end).
	Terminated(ctx context.Context, pageToken string) ([]*memoryv1.SessionIndexEntry, string, error)
}

// Errors of the port and of a run.
var (
	// ErrNotFound is wrapped by a port's error when what it was asked for
	// does not exist.
	ErrNotFound = errors.New("consolidation: not found")
	// ErrConflict is wrapped by a port's error when a write's expected
	// version is not the key's (another writer moved it).
	ErrConflict = errors.New("consolidation: version conflict")
	// ErrBehind is returned when the read model did not reach the
	// session's last sequence in time: the messages read would miss its
	// latest ones. Retry later.
	ErrBehind = errors.New("consolidation: the read model is behind the session")
	// ErrClosed is returned by a run started after Close.
	ErrClosed = errors.New("consolidation: closed")
)
