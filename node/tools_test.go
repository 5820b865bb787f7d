package node_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/tools"
)

func toolsRequest(t *testing.T, nc *nats.Conn, body string) (map[string]json.RawMessage, string) {
	t.Helper()
	msg := nats.NewMsg("mem.v1.tools.list")
	msg.Header.Set("Content-Type", "application/json")
	msg.Data = []byte(body)
	rep, err := nc.RequestMsg(msg, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(rep.Data, &r); err != nil {
		t.Fatal(err)
	}
	return r, rep.Header.Get("Nats-Service-Error")
}

// TestToolsEndpoint: mem.v1.tools.list answers the tool definitions of
// package tools in the chat API's own shape, for the single-user node and
// for a tenant (agent a1 of examples/auth), and names a bad format.
func TestToolsEndpoint(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	tn := startTenantNode(t)
	a1 := tn.as(t, "agent-a1", "a1-secret")
	for _, conn := range []*nats.Conn{nc, a1.nc} {
		r, errText := toolsRequest(t, conn, `{}`)
		var openai []tools.OpenAIFunction
		if err := json.Unmarshal(r["tools"], &openai); err != nil || errText != "" {
			t.Fatalf("openai tools: %v %s", err, errText)
		}
		if len(openai) != len(tools.All()) || openai[0].Type != "function" || openai[0].Function.Name != tools.All()[0].Name {
			t.Fatalf("openai tools: %+v", openai)
		}
		r, _ = toolsRequest(t, conn, `{"format":"anthropic"}`)
		var anthropic []tools.AnthropicTool
		if err := json.Unmarshal(r["tools"], &anthropic); err != nil || len(anthropic) != len(tools.All()) || len(anthropic[0].InputSchema) == 0 {
			t.Fatalf("anthropic tools: %v %+v", err, anthropic)
		}
		if _, errText := toolsRequest(t, conn, `{"format":"yaml"}`); errText == "" || errText[:6] != "format" {
			t.Fatalf("format yaml: %q", errText)
		}
	}
}
