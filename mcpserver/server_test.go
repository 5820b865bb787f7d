package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/mcpserver"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/tools"
)

// connect runs a server for ex on in-memory transports and returns a
// client session of the Go SDK's client, closed by t.Cleanup.
func connect(t *testing.T, ex *tools.Executor) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(ex, "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content: %v", res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	return tc.Text
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// The server lists exactly the tools of package tools, with their schemas,
// and each call returns what the Executor returns, as text and structured
// content; a failure is a tool error carrying the *tools.Error.
func TestToolsOverMCP(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	cs := connect(t, &tools.Executor{Client: c, Agent: "a1"})
	ctx := context.Background()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := tools.All()
	if len(list.Tools) != len(all) {
		t.Fatalf("%d tools listed, want %d", len(list.Tools), len(all))
	}
	for _, tool := range list.Tools { // MCP lists by name
		want, ok := tools.Lookup(tool.Name)
		got, _ := json.Marshal(tool.InputSchema)
		var a, b any
		_ = json.Unmarshal(got, &a)
		_ = json.Unmarshal(want.InputSchema, &b)
		if !ok || tool.Description != want.Description || !jsonEqual(a, b) {
			t.Errorf("tool %s differs from tools.Lookup: %v", tool.Name, tool)
		}
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint != want.ReadOnly {
			t.Errorf("%s: annotations %+v", tool.Name, tool.Annotations)
		}
	}

	res := call(t, cs, tools.MemoryWrite, map[string]any{"scope": "agent", "key": "k1", "value": "v1"})
	if res.IsError {
		t.Fatalf("memory_write: %s", text(t, res))
	}
	ent, err := c.GetEntry(ctx, client.Agent("a1"), "k1", 0)
	if err != nil || string(ent.GetValue()) != "v1" {
		t.Fatalf("entry written over MCP: %v %v", ent, err)
	}
	var out struct {
		Entry struct {
			Value   string
			Version uint64
		}
	}
	if err := json.Unmarshal([]byte(text(t, res)), &out); err != nil || out.Entry.Version != ent.GetVersion() {
		t.Errorf("result %s: %v", text(t, res), err)
	}
	if sc, ok := res.StructuredContent.(map[string]any); !ok || sc["scope"] != "agent" {
		t.Errorf("structured content %v", res.StructuredContent)
	}

	res = call(t, cs, tools.SessionAppend, map[string]any{"session_id": "s1", "messages": []any{map[string]any{"role": "USER"}}})
	var e struct{ Error tools.Error }
	if !res.IsError || json.Unmarshal([]byte(text(t, res)), &e) != nil || e.Error.Field != "messages[0].role" || e.Error.Code != 400 {
		t.Errorf("bad role: error %v %s", res.IsError, text(t, res))
	}
	res = call(t, cs, tools.MemoryRead, map[string]any{"scope": "agent", "key": "missing"})
	if !res.IsError || json.Unmarshal([]byte(text(t, res)), &e) != nil || e.Error.Code != 404 || e.Error.Field != "key" {
		t.Errorf("missing key: %s", text(t, res))
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A session's context is a resource: the template is listed, a read gives
// the session_context result, an unknown session is "resource not found".
func TestContextResource(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	ex := &tools.Executor{Client: client.New(nc), Agent: "a1"}
	cs := connect(t, ex)
	ctx := context.Background()
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != mcpserver.ContextTemplate {
		t.Fatalf("templates: %v %v", tl, err)
	}
	if res := call(t, cs, tools.SessionAppend, map[string]any{"session_id": "s1",
		"messages": []any{map[string]any{"role": "user", "content": "remember the blue door"}}}); res.IsError {
		t.Fatal(text(t, res))
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agentmem://session/s1/context"})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("read: %v %v", rr, err)
	}
	want, err := ex.Execute(ctx, tools.SessionContext, json.RawMessage(`{"session_id":"s1"}`))
	if err != nil || rr.Contents[0].Text != string(want) || !strings.Contains(rr.Contents[0].Text, "blue door") {
		t.Errorf("resource %s, tool says %s (%v)", rr.Contents[0].Text, want, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agentmem://session/nope/context"}); err == nil {
		t.Error("an unknown session's context was read")
	}
}

// Streamable HTTP: a client of the Go SDK calls a tool; cancelling the
// context stops the server, with an MCP session still open, and leaves no
// goroutine behind (goleak in TestMain).
func TestServeHTTP(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	ex := &tools.Executor{Client: client.New(nc), Agent: "a1"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.ServeHTTP(ctx, mcpserver.New(ex, "test"), ln, mcpserver.HTTPOptions{SessionTimeout: time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, tools.MemoryWrite, map[string]any{"scope": "global", "key": "k", "value": "over http"})
	if res.IsError {
		t.Fatal(text(t, res))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeHTTP did not return after cancel")
	}
	_ = cs.Close()
}

func TestConfigValidate(t *testing.T) {
	ok := mcpserver.DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*mcpserver.Config){
		"no url":           func(c *mcpserver.Config) { c.NATSURL = "" },
		"creds and user":   func(c *mcpserver.Config) { c.NATSCreds, c.NATSUser = "x.creds", "u" },
		"password no user": func(c *mcpserver.Config) { c.NATSPassword = "p" },
		"zero timeout":     func(c *mcpserver.Config) { c.Timeout = 0 },
	} {
		c := mcpserver.DefaultConfig()
		mutate(&c)
		if err := c.Validate(); !errors.Is(err, mcpserver.ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
