package segmented

import (
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// renderCase is a context with every kind of item: ROM, a Kernel fact, a
// memory item, an L2 summary, a recalled message, a promoted tool result (whose call is gone), an L1 summary,
// then an assistant turn first (its user turn was compressed), parallel
// tool calls with their results, and a user question.
func renderCase() *memoryv1.ContextReply {
	sys := func(layer, text string) *memoryv1.ContextMessage {
		return &memoryv1.ContextMessage{Layer: layer, Role: memoryv1.Role_ROLE_SYSTEM, Content: text}
	}
	return &memoryv1.ContextReply{Messages: []*memoryv1.ContextMessage{
		sys(LayerROM, "You are a travel agent."),
		sys(LayerKernel, "Fact budget: 4000 EUR"),
		sys(LayerMemory, "Memory user:u1 diet (v2): vegetarian"),
		sys(LayerL2, "Summary: the user wants Lisbon in May."),
		sys(LayerRecalled, "Recalled m7 (user, turn 3, 2026-05-01): my passport expires in June"),
		{Layer: LayerPromoted, Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "old", Content: "hotel list"},
		sys(LayerL1, "Summary: flights compared."),
		{Layer: LayerL1, Role: memoryv1.Role_ROLE_ASSISTANT, Content: "Let me check two things.", ToolCalls: []*memoryv1.ToolCall{
			{Id: "c1", Name: "weather", Arguments: `{"city":"Lisbon"}`}, {Id: "c2", Name: "price", Arguments: "not json"}}},
		{Layer: LayerL1, Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "c1", Content: "sunny"},
		{Layer: LayerL1, Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "c2", Content: "120 EUR"},
		{Layer: LayerL1, Role: memoryv1.Role_ROLE_USER, Content: "Book it."},
	}}
}

func TestRenderOpenAI(t *testing.T) {
	r := Render(renderCase(), memoryv1.ContextFormat_CONTEXT_FORMAT_OPENAI)
	msgs := r.GetOpenai()
	if len(msgs) != 5 || msgs[0].GetRole() != "system" {
		t.Fatalf("want a leading system message then 4 messages, got %v", msgs)
	}
	for i, m := range msgs[1:] {
		if m.GetRole() == "system" {
			t.Fatalf("system message at %d", i+1)
		}
	}
	want := "You are a travel agent.\n\nFact budget: 4000 EUR\n\nMemory user:u1 diet (v2): vegetarian\n\nSummary: the user wants Lisbon in May.\n\n" +
		"Recalled m7 (user, turn 3, 2026-05-01): my passport expires in June\n\n[tool] hotel list\n\nSummary: flights compared."
	if msgs[0].GetContent() != want || r.GetSystem() != want {
		t.Fatalf("system = %q", msgs[0].GetContent())
	}
	calls := msgs[1].GetToolCalls()
	if msgs[1].GetRole() != "assistant" || len(calls) != 2 || calls[0].GetType() != "function" ||
		calls[0].GetFunction().GetName() != "weather" || calls[1].GetFunction().GetArguments() != "not json" {
		t.Fatalf("assistant tool calls = %v", msgs[1])
	}
	if msgs[2].GetRole() != "tool" || msgs[2].GetToolCallId() != "c1" || msgs[3].GetToolCallId() != "c2" || msgs[4].GetRole() != "user" {
		t.Fatalf("tool results / user = %v", msgs[2:])
	}
}

func TestRenderAnthropic(t *testing.T) {
	r := Render(renderCase(), memoryv1.ContextFormat_CONTEXT_FORMAT_ANTHROPIC)
	msgs := r.GetAnthropic()
	if r.GetSystem() == "" || len(r.GetOpenai()) != 0 {
		t.Fatal("system string missing, or OpenAI messages set")
	}
	// user (placeholder: the kept part starts with the assistant),
	// assistant (text + 2 tool_use), user (2 tool_result + the question).
	if len(msgs) != 3 || msgs[0].GetRole() != "user" || msgs[1].GetRole() != "assistant" || msgs[2].GetRole() != "user" {
		t.Fatalf("roles = %v", msgs)
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].GetRole() == msgs[i-1].GetRole() {
			t.Fatalf("roles do not alternate at %d", i)
		}
	}
	a := msgs[1].GetContent()
	if len(a) != 3 || a[1].GetType() != "tool_use" || a[1].GetId() != "c1" ||
		a[1].GetInput().GetFields()["city"].GetStringValue() != "Lisbon" ||
		a[2].GetInput().GetFields()["arguments"].GetStringValue() != "not json" {
		t.Fatalf("assistant blocks = %v", a)
	}
	u := msgs[2].GetContent()
	if len(u) != 3 || u[0].GetType() != "tool_result" || u[0].GetToolUseId() != "c1" || u[1].GetToolUseId() != "c2" ||
		u[2].GetType() != "text" || u[2].GetText() != "Book it." {
		t.Fatalf("user blocks = %v", u)
	}
	if Render(renderCase(), memoryv1.ContextFormat_CONTEXT_FORMAT_UNSPECIFIED) != nil {
		t.Fatal("unspecified format rendered")
	}
}
