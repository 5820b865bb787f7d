package api

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// DefaultLargeToolResultBytes is the size above which a tool result is stored
// as large data and only its reference is kept in the message and the budget.
const DefaultLargeToolResultBytes = 100 << 10

// needsOffload reports whether req has a tool result to store as large data.
func (s *Service) needsOffload(req *memoryv1.AppendRequest) bool {
	if s.data == nil {
		return false
	}
	for _, m := range req.GetMessages() {
		if m.GetRole() == memoryv1.Role_ROLE_TOOL && m.GetDataRef() == nil && len(m.GetContent()) > s.cfg.LargeToolResultBytes {
			return true
		}
	}
	return false
}

// offload stores each large tool result as large data and replaces its
// content with a reference text (~50 tokens). A retried append (same
// command id) stores the bytes again under a new id; the duplicate command
// is then answered from the session and the extra copy expires with its lease.
func (s *Service) offload(ctx context.Context, sessionID string, req *memoryv1.AppendRequest) (*memoryv1.AppendRequest, error) {
	out := proto.Clone(req).(*memoryv1.AppendRequest)
	for i, m := range out.GetMessages() {
		if m.GetRole() != memoryv1.Role_ROLE_TOOL || m.GetDataRef() != nil || len(m.GetContent()) <= s.cfg.LargeToolResultBytes {
			continue
		}
		ref, _, err := s.data.Put(ctx, "session:"+sessionID, []byte(m.GetContent()), "text/plain; charset=utf-8",
			map[string]string{"tool_call_id": m.GetToolCallId(), "name": m.GetName()}, 0)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: store as large data: %w", i, err)
		}
		m.DataRef = ref
		m.Content = ReferenceText(ref)
	}
	return out, nil
}

// ReferenceText is what a message holding large data says in the context.
func ReferenceText(ref *memoryv1.DataReference) string {
	sha := ref.GetSha256()
	if len(sha) > 16 {
		sha = sha[:16]
	}
	return fmt.Sprintf("[tool result stored as large data %s: %d bytes, sha256 %s; fetch it with mem.v1.data.get]", ref.GetId(), ref.GetSize(), sha)
}
