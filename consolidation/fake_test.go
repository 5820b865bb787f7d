package consolidation

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memScopes is an in-memory Scopes: each key's versions, the recent
// command ids, and a log of the writes in order.
type memScopes struct {
	mu      sync.Mutex
	entries map[string][]*memoryv1.Entry // scope + "\x00" + key → versions
	cmds    map[string]*memoryv1.Entry   // command id → the version it wrote
	writes  []string                     // "scope key" of each write, in order
	config  map[string]*memoryv1.ScopeConfig
	// conflictOnce makes the next Put of this key answer ErrConflict.
	conflictOnce string
}

func newMemScopes() *memScopes {
	return &memScopes{entries: map[string][]*memoryv1.Entry{}, cmds: map[string]*memoryv1.Entry{}, config: map[string]*memoryv1.ScopeConfig{}}
}

var _ Scopes = (*memScopes)(nil)

func (m *memScopes) Get(_ context.Context, s Scope, key string) (*memoryv1.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.entries[s.String()+"\x00"+key]
	if len(vs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return proto.CloneOf(vs[len(vs)-1]), nil
}

func (m *memScopes) History(_ context.Context, s Scope, key string) ([]*memoryv1.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*memoryv1.Entry
	for _, v := range m.entries[s.String()+"\x00"+key] {
		out = append(out, proto.CloneOf(v))
	}
	return out, nil
}

func (m *memScopes) List(_ context.Context, s Scope, prefix, _ string) ([]*memoryv1.Entry, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*memoryv1.Entry
	for k, vs := range m.entries {
		sc, key, _ := strings.Cut(k, "\x00")
		if sc == s.String() && strings.HasPrefix(key, prefix) {
			out = append(out, proto.CloneOf(vs[len(vs)-1]))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetKey() < out[j].GetKey() })
	return out, "", nil
}

func (m *memScopes) write(s Scope, cmd, key string, expected *int64, e *memoryv1.Entry) (*memoryv1.EntryReply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.cmds[cmd]; ok {
		return &memoryv1.EntryReply{Result: &memoryv1.MutationReply{Duplicate: true, Version: v.GetVersion()}, Entry: v}, nil
	}
	if m.conflictOnce == key {
		m.conflictOnce = ""
		return nil, fmt.Errorf("%w: %s moved", ErrConflict, key)
	}
	k := s.String() + "\x00" + key
	vs := m.entries[k]
	cur := int64(0)
	if len(vs) > 0 && !vs[len(vs)-1].GetDeleted() {
		cur = int64(vs[len(vs)-1].GetVersion())
	}
	if expected != nil && *expected >= 0 && *expected != cur {
		return nil, fmt.Errorf("%w: %s at %d, not %d", ErrConflict, key, cur, *expected)
	}
	e.Version = uint64(len(vs) + 1)
	m.entries[k] = append(vs, e)
	m.cmds[cmd] = e
	m.writes = append(m.writes, s.String()+" "+key)
	return &memoryv1.EntryReply{Result: &memoryv1.MutationReply{Version: e.Version}, Entry: e}, nil
}

func (m *memScopes) Put(_ context.Context, s Scope, req *memoryv1.PutEntryRequest) (*memoryv1.EntryReply, error) {
	return m.write(s, req.GetCommandId(), req.GetKey(), req.ExpectedVersion, &memoryv1.Entry{Key: req.GetKey(), Value: req.GetValue(),
		MemoryType: req.GetMemoryType(), Metadata: req.GetMetadata(), Tags: req.GetTags()})
}

func (m *memScopes) Delete(_ context.Context, s Scope, req *memoryv1.DeleteEntryRequest) (*memoryv1.EntryReply, error) {
	return m.write(s, req.GetCommandId(), req.GetKey(), req.ExpectedVersion, &memoryv1.Entry{Key: req.GetKey(), Deleted: true})
}

func (m *memScopes) Config(_ context.Context, s Scope) (*memoryv1.ScopeConfig, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.config[s.String()], nil
}

// writesOf returns the writes so far and forgets them.
func (m *memScopes) writesOf() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.writes
	m.writes = nil
	return w
}

// memSessions is an in-memory Sessions.
type memSessions struct {
	mu       sync.Mutex
	sessions map[string]*memoryv1.SessionInfo
	messages map[string][]*memoryv1.Message
	behind   error // WaitFor's answer
}

var _ Sessions = (*memSessions)(nil)

func (m *memSessions) Info(_ context.Context, id string) (*memoryv1.SessionInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	info, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return proto.CloneOf(info), nil
}

func (m *memSessions) WaitFor(context.Context, uint64) error { return m.behind }

func (m *memSessions) Messages(_ context.Context, id string, offset, limit int) ([]*memoryv1.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.messages[id]
	if offset >= len(ms) {
		return nil, nil
	}
	return ms[offset:min(len(ms), offset+limit)], nil
}

func (m *memSessions) Terminated(context.Context, string) ([]*memoryv1.SessionIndexEntry, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*memoryv1.SessionIndexEntry
	for id, s := range m.sessions {
		if s.GetStatus() == memoryv1.SessionStatus_SESSION_STATUS_TERMINATED {
			out = append(out, &memoryv1.SessionIndexEntry{SessionId: id, UserId: s.GetUserId(), AgentId: s.GetAgentId(), UpdatedUnixNano: s.GetUpdatedUnixNano()})
		}
	}
	return out, "", nil
}

// add adds session id of user and agent with the turns (user, assistant,
// …), each said at said.
func (m *memSessions) add(id, user, agent string, said int64, turns ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions, m.messages = map[string]*memoryv1.SessionInfo{}, map[string][]*memoryv1.Message{}
	}
	m.sessions[id] = &memoryv1.SessionInfo{SessionId: id, UserId: user, AgentId: agent, Seq: uint64(len(turns))}
	for i, text := range turns {
		role := memoryv1.Role_ROLE_USER
		if i%2 == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		m.messages[id] = append(m.messages[id], &memoryv1.Message{Id: fmt.Sprintf("%s-m%d", id, i), Seq: uint64(i + 1), Role: role,
			Content: text, CreatedUnixNano: said + 1e9, SaidUnixNano: said})
	}
}
