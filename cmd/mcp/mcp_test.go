package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/tools"
)

// build compiles agentmem-mcp into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentmem-mcp")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// The binary over stdio, driven by the Go SDK's client: it lists the tools
// and a call reaches the node; closing stdin stops it.
func TestStdioWithGoClient(t *testing.T) {
	bin := build(t)
	_, nc := node.StartForTest(t, nil)
	cmd := exec.Command(bin, "--nats-url", nc.ConnectedUrl(), "--agent", "a1")
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != len(tools.All()) {
		t.Fatalf("tools: %v %v", list, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.MemoryWrite, Arguments: map[string]any{"scope": "agent", "key": "k", "value": "v"}})
	if err != nil || res.IsError {
		t.Fatalf("memory_write: %v %v", res, err)
	}
	if e, err := client.New(nc).GetEntry(ctx, client.Agent("a1"), "k", 0); err != nil || string(e.GetValue()) != "v" {
		t.Fatalf("entry: %v %v", e, err)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("agentmem-mcp ended with %v", cmd.ProcessState)
	}
}

// --print-tools prints the tool definitions in each shape.
func TestPrintTools(t *testing.T) {
	bin := build(t)
	for _, format := range []string{"openai", "anthropic", "mcp"} {
		out, err := exec.Command(bin, "--print-tools", format).Output()
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		var got []map[string]any
		if err := json.Unmarshal(out, &got); err != nil || len(got) != len(tools.All()) {
			t.Fatalf("%s: %d tools, %v", format, len(got), err)
		}
	}
	if err := exec.Command(bin, "--print-tools", "yaml").Run(); err == nil {
		t.Error("--print-tools yaml succeeded")
	}
}

// waitCtx is a context bounded for one conformance step.
func waitCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// The binary over stdio answers malformed lines with JSON-RPC errors and
// keeps serving (issue 18, finding 5: one such line used to end it).
func TestStdioBinarySurvivesMalformedLines(t *testing.T) {
	bin := build(t)
	_, nc := node.StartForTest(t, nil)
	cmd := exec.Command(bin, "--nats-url", nc.ConnectedUrl(), "--agent", "a1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := []string{`[]`, `null`, "\xff\xfe", `{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, strings.Repeat("[", 100000),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`}
	go func() {
		for _, l := range lines {
			_, _ = io.WriteString(in, l+"\n")
		}
	}()
	r := bufio.NewReader(out)
	var last string
	for i := range 7 { // five errors, initialize, tools/list
		b, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reply %d: %v (the server stopped)", i, err)
		}
		last = b
	}
	if !strings.Contains(last, `"id":2`) || !strings.Contains(last, tools.MemoryWrite) {
		t.Fatalf("tools/list after malformed lines: %s", last)
	}
	_ = in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentmem-mcp ended with %v after stdin closed", err)
	}
}
