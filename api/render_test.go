package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestContextRenderedJSON asks for the context in JSON, as a non-Go client
// would, in both chat shapes, and decodes the reply with encoding/json into
// the shapes the chat APIs take.
func TestContextRenderedJSON(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "j1", &memoryv1.CreateSessionRequest{SystemPrompt: "Be brief."}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "j1", user("hello"),
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "hi!"}); err != nil {
		t.Fatal(err)
	}
	var openai struct {
		Rendered struct {
			Openai []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"openai"`
		} `json:"rendered"`
	}
	code, desc, body := rawRequest(t, nc, "mem.v1.session.j1.context", []byte(`{"format":"CONTEXT_FORMAT_OPENAI"}`), true)
	if code != "" {
		t.Fatalf("%s %s", code, desc)
	}
	if err := json.Unmarshal(body, &openai); err != nil {
		t.Fatal(err)
	}
	got := openai.Rendered.Openai
	if len(got) != 3 || got[0].Role != "system" || got[0].Content != "Be brief." || got[1].Role != "user" || got[2].Content != "hi!" {
		t.Fatalf("openai messages = %+v (body %s)", got, body)
	}
	// One OpenAI shape (the MCP tools' too): no empty name, tool_calls or
	// tool_call_id on a message that has none.
	for _, empty := range []string{`"name":""`, `"tool_calls":[]`, `"tool_call_id":""`} {
		if i := strings.Index(string(body), `"openai":`); i >= 0 && strings.Contains(string(body[i:]), empty) {
			t.Errorf("rendered.openai carries %s: %s", empty, body[i:])
		}
	}
	var anthropic struct {
		Rendered struct {
			System    string `json:"system"`
			Anthropic []struct {
				Role    string `json:"role"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"anthropic"`
		} `json:"rendered"`
	}
	code, desc, body = rawRequest(t, nc, "mem.v1.session.j1.context", []byte(`{"format":"CONTEXT_FORMAT_ANTHROPIC"}`), true)
	if code != "" {
		t.Fatalf("%s %s", code, desc)
	}
	if err := json.Unmarshal(body, &anthropic); err != nil {
		t.Fatal(err)
	}
	a := anthropic.Rendered
	if a.System != "Be brief." || len(a.Anthropic) != 2 || a.Anthropic[0].Role != "user" || a.Anthropic[1].Content[0].Text != "hi!" {
		t.Fatalf("anthropic = %+v (body %s)", a, body)
	}
}
