package segmented

import (
	"encoding/json"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Render returns cx's messages ready for a chat API (memoryv1.ContextFormat);
// nil for CONTEXT_FORMAT_UNSPECIFIED. It is a pure function of the layered
// context, so a context from replay or `inspect --at-seq` renders the same.
//
// Both formats put every system item (ROM, Kernel, the memory section,
// summaries, the recalled section) first, joined
// by a blank line: OpenAI as one leading system message, Anthropic as the
// system string. Messages recalled into the promoted layer are quoted in
// that system text as "[role] content" lines (they may be tool results
// whose call is not in the context, which neither API accepts as a
// message). The other messages keep their order and roles. A system
// message never appears in the middle. The rendered text adds a few tokens
// of separators and role tags to what the budget counted.
func Render(cx *memoryv1.ContextReply, format memoryv1.ContextFormat) *memoryv1.RenderedContext {
	if format == memoryv1.ContextFormat_CONTEXT_FORMAT_UNSPECIFIED {
		return nil
	}
	var (
		system []string
		rest   []*memoryv1.ContextMessage
	)
	for _, m := range cx.GetMessages() {
		switch {
		case m.GetRole() == memoryv1.Role_ROLE_SYSTEM:
			system = append(system, m.GetContent())
		case m.GetLayer() == LayerPromoted:
			system = append(system, "["+roleName(m.GetRole())+"] "+m.GetContent())
		default:
			rest = append(rest, m)
		}
	}
	out := &memoryv1.RenderedContext{Format: format, System: strings.Join(system, "\n\n")}
	if format == memoryv1.ContextFormat_CONTEXT_FORMAT_ANTHROPIC {
		out.Anthropic = renderAnthropic(rest)
		return out
	}
	if out.System != "" {
		out.Openai = append(out.Openai, &memoryv1.OpenAIMessage{Role: "system", Content: out.System})
	}
	for _, m := range rest {
		om := &memoryv1.OpenAIMessage{Role: roleName(m.GetRole()), Content: m.GetContent(), Name: m.GetName(), ToolCallId: m.GetToolCallId()}
		for _, c := range m.GetToolCalls() {
			om.ToolCalls = append(om.ToolCalls, &memoryv1.OpenAIToolCall{Id: c.GetId(), Type: "function",
				Function: &memoryv1.OpenAIFunctionCall{Name: c.GetName(), Arguments: c.GetArguments()}})
		}
		out.Openai = append(out.Openai, om)
	}
	return out
}

// renderAnthropic maps the non-system messages to Messages API messages:
// tool results become user tool_result blocks, tool calls assistant
// tool_use blocks, and consecutive messages of one role merge into one
// message (the API wants user and assistant to alternate, user first: a
// conversation whose kept part starts with the assistant gets a first user
// message saying the earlier part is summarized in the system text).
func renderAnthropic(msgs []*memoryv1.ContextMessage) []*memoryv1.AnthropicMessage {
	var out []*memoryv1.AnthropicMessage
	add := func(role string, blocks ...*memoryv1.AnthropicBlock) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		if len(out) == 0 && role == "assistant" {
			out = append(out, &memoryv1.AnthropicMessage{Role: "user", Content: []*memoryv1.AnthropicBlock{
				{Type: "text", Text: "(The earlier conversation is summarized in the system prompt.)"}}})
		}
		out = append(out, &memoryv1.AnthropicMessage{Role: role, Content: blocks})
	}
	for _, m := range msgs {
		switch m.GetRole() {
		case memoryv1.Role_ROLE_TOOL:
			add("user", &memoryv1.AnthropicBlock{Type: "tool_result", ToolUseId: m.GetToolCallId(), Content: m.GetContent()})
		case memoryv1.Role_ROLE_ASSISTANT:
			var blocks []*memoryv1.AnthropicBlock
			if m.GetContent() != "" {
				blocks = append(blocks, &memoryv1.AnthropicBlock{Type: "text", Text: m.GetContent()})
			}
			for _, c := range m.GetToolCalls() {
				blocks = append(blocks, &memoryv1.AnthropicBlock{Type: "tool_use", Id: c.GetId(), Name: c.GetName(), Input: toolInput(c.GetArguments())})
			}
			if len(blocks) > 0 {
				add("assistant", blocks...)
			}
		default:
			add("user", &memoryv1.AnthropicBlock{Type: "text", Text: m.GetContent()})
		}
	}
	return out
}

// toolInput is a tool call's arguments as a JSON object; arguments that are
// not one are kept as a string under "arguments".
func toolInput(args string) *structpb.Struct {
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err == nil && obj != nil {
		if s, err := structpb.NewStruct(obj); err == nil {
			return s
		}
	}
	if args == "" {
		return &structpb.Struct{}
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{"arguments": structpb.NewStringValue(args)}}
}

// roleName is the chat-API name of a role.
func roleName(r memoryv1.Role) string {
	switch r {
	case memoryv1.Role_ROLE_SYSTEM:
		return "system"
	case memoryv1.Role_ROLE_ASSISTANT:
		return "assistant"
	case memoryv1.Role_ROLE_TOOL:
		return "tool"
	}
	return "user"
}

// ContextAs is Context with the rendering of format (Render) added. The
// cached reply is not modified: the result shares its read-only parts.
func (s *State) ContextAs(format memoryv1.ContextFormat) *memoryv1.ContextReply {
	cx := s.Context()
	if format == memoryv1.ContextFormat_CONTEXT_FORMAT_UNSPECIFIED {
		return cx
	}
	return &memoryv1.ContextReply{
		SessionId: cx.SessionId, Version: cx.Version, Seq: cx.Seq, Messages: cx.Messages,
		Layers: cx.Layers, Usage: cx.Usage, RomVersion: cx.RomVersion, Turn: cx.Turn,
		Rendered: Render(cx, format),
	}
}
