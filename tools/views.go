package tools

import (
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The JSON shapes of tool results: what an LLM reads, so plain names,
// lowercase enums, numbers as numbers and times as RFC 3339.

type toolCallView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type messageView struct {
	ID         string         `json:"id"`
	Seq        uint64         `json:"seq,omitempty"`
	Layer      string         `json:"layer,omitempty"`
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []toolCallView `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Tokens     uint32         `json:"tokens"`
	Turn       uint32         `json:"turn,omitempty"`
	SaidAt     string         `json:"said_at,omitempty"`
}

type usageView struct {
	Budget  uint32  `json:"budget"`
	Used    uint32  `json:"used"`
	Percent float64 `json:"percent"`
}

type entryView struct {
	Key           string            `json:"key"`
	Value         string            `json:"value"`
	ValueEncoding string            `json:"value_encoding,omitempty"`
	ContentType   string            `json:"content_type,omitempty"`
	MemoryType    string            `json:"memory_type,omitempty"`
	Version       uint64            `json:"version"`
	Deleted       bool              `json:"deleted"`
	Change        string            `json:"change"`
	Importance    float64           `json:"importance"`
	Tags          []string          `json:"tags,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	UpdatedBy     string            `json:"updated_by,omitempty"`
	UpdatedAt     string            `json:"updated_at,omitempty"`
	ExpiresAt     string            `json:"expires_at,omitempty"`
	RestoredFrom  uint64            `json:"restored_from,omitempty"`
}

// lower is an enum value name without its prefix, in lowercase
// (ROLE_USER -> user).
func lower(name, prefix string) string {
	if strings.HasSuffix(name, "_UNSPECIFIED") {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}

func rfc3339(unixNano int64) string {
	if unixNano == 0 {
		return ""
	}
	return time.Unix(0, unixNano).UTC().Format(time.RFC3339Nano)
}

func toolCallViews(calls []*memoryv1.ToolCall) []toolCallView {
	var out []toolCallView
	for _, c := range calls {
		out = append(out, toolCallView{ID: c.GetId(), Name: c.GetName(), Arguments: c.GetArguments()})
	}
	return out
}

func viewMessage(m *memoryv1.Message) messageView {
	return messageView{
		ID: m.GetId(), Seq: m.GetSeq(), Role: lower(m.GetRole().String(), "ROLE_"), Content: m.GetContent(),
		Name: m.GetName(), ToolCalls: toolCallViews(m.GetToolCalls()), ToolCallID: m.GetToolCallId(),
		Tokens: m.GetTokens(), Turn: m.GetTurn(), SaidAt: rfc3339(m.GetSaidUnixNano()),
	}
}

func viewContextMessage(m *memoryv1.ContextMessage) messageView {
	return messageView{
		ID: m.GetId(), Layer: m.GetLayer(), Role: lower(m.GetRole().String(), "ROLE_"), Content: m.GetContent(),
		Name: m.GetName(), ToolCalls: toolCallViews(m.GetToolCalls()), ToolCallID: m.GetToolCallId(),
		Tokens: m.GetTokens(),
	}
}

func viewUsage(u *memoryv1.Usage) usageView {
	return usageView{Budget: u.GetBudget(), Used: u.GetUsed(), Percent: u.GetPercent()}
}

// viewEntry is e with its original value as text (base64 when not UTF-8).
func viewEntry(e *memoryv1.Entry) (*entryView, error) {
	if e == nil {
		return nil, nil
	}
	value := e.GetValue()
	if e.GetCompressed() {
		v, err := sharedmem.DecodeValue(e)
		if err != nil {
			return nil, &Error{Code: 500, Field: "value", Message: err.Error()}
		}
		value = v
	}
	v := &entryView{
		Key: e.GetKey(), Value: string(value), ContentType: e.GetContentType(),
		MemoryType: lower(e.GetMemoryType().String(), "MEMORY_TYPE_"), Version: e.GetVersion(),
		Deleted: e.GetDeleted(), Change: lower(e.GetChange().String(), "CHANGE_KIND_"),
		Importance: e.GetImportance(), Tags: e.GetTags(), Metadata: e.GetMetadata(),
		UpdatedBy: e.GetUpdatedBy(), UpdatedAt: rfc3339(e.GetUpdatedUnixNano()),
		ExpiresAt: rfc3339(e.GetExpiresUnixNano()), RestoredFrom: e.GetRestoredFrom(),
	}
	if !utf8.Valid(value) {
		v.Value, v.ValueEncoding = base64.StdEncoding.EncodeToString(value), "base64"
	}
	return v, nil
}

func viewEntries(es []*memoryv1.Entry) ([]*entryView, error) {
	out := make([]*entryView, 0, len(es))
	for _, e := range es {
		v, err := viewEntry(e)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
