package node_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestPatternLibraryOnNode: on a real node, a session naming the library
// "sql" (the global scope's patterns/sql/…) has its patterns in its ROM;
// the library's update reaches the session at its next user message (not
// at a tool result of the turn in flight), as ROM version 2 in the
// context, while a session without the library keeps version 1. With the
// node stopped (no library to read), replay verify accepts the log, and
// replay inspect shows ROM version 1's text before the update's turn and
// version 2's after it.
func TestPatternLibraryOnNode(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	n, nc := node.StartForTest(t, func(c *node.Config) { c.DataDir = data })
	c := client.New(nc)
	ctx := context.Background()
	put := func(key, text string) {
		t.Helper()
		if _, err := c.Put(ctx, client.Global(), &memoryv1.PutEntryRequest{Key: key, Value: []byte(text)}); err != nil {
			t.Fatal(err)
		}
		// An entry search waits for the caller's last write: the
		// projection the sessions read the libraries from has it.
		if _, err := c.SearchEntries(ctx, client.Global(), &memoryv1.SearchEntriesRequest{Query: "parameters"}); err != nil {
			t.Fatal(err)
		}
	}
	put(node.PatternKeyPrefix+"sql/01-binds", "Use bind parameters.")
	put(node.PatternKeyPrefix+"sql/02-columns", "Name columns explicitly.")
	for _, s := range []struct {
		id   string
		libs []string
	}{{"with-lib", []string{"sql"}}, {"without", nil}} {
		if _, err := c.CreateSession(ctx, s.id, &memoryv1.CreateSessionRequest{SystemPrompt: "You are a DBA.", Patterns: []string{"Be terse."}, PatternLibraries: s.libs}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, s.id, userMsg("list the slow queries"), &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT,
			ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "pg_stat", Arguments: "{}"}}}); err != nil {
			t.Fatal(err)
		}
	}
	romOf := func(id string) (uint32, string) {
		t.Helper()
		cx, err := c.Context(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// A library's patterns are in the ROM, never offered again as
		// memory entries of the scope that holds them.
		if mem := layerText(cx, "memory"); strings.Contains(mem, "bind parameters") {
			t.Fatalf("%s: a library's pattern in the memory section: %q", id, mem)
		}
		return cx.GetRomVersion(), layerText(cx, "rom")
	}
	if v, text := romOf("with-lib"); v != 1 || !strings.Contains(text, "Use bind parameters.") || !strings.Contains(text, "Be terse.") {
		t.Fatalf("ROM v%d %q, want v1 with the library's patterns", v, text)
	}
	put(node.PatternKeyPrefix+"sql/01-binds", "Use bind parameters, always.")
	var inFlight uint64 // the last write of with-lib's turn in flight
	for _, id := range []string{"with-lib", "without"} {
		rep, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "c1", Content: "q1 12s"})
		if err != nil {
			t.Fatal(err)
		}
		if id == "with-lib" {
			inFlight = rep.GetResult().GetSeq()
		}
	}
	if v, text := romOf("with-lib"); v != 1 || strings.Contains(text, "always") {
		t.Fatalf("the ROM changed within the turn: v%d %q", v, text)
	}
	for _, id := range []string{"with-lib", "without"} {
		if _, err := c.AppendMessages(ctx, id, userMsg("and the fix?")); err != nil {
			t.Fatal(err)
		}
	}
	if v, text := romOf("with-lib"); v != 2 || !strings.Contains(text, "Use bind parameters, always.") || !strings.Contains(text, "Name columns explicitly.") {
		t.Fatalf("next turn's ROM v%d %q, want v2 with the update", v, text)
	}
	if v, _ := romOf("without"); v != 1 {
		t.Fatalf("a session without the library has ROM v%d", v)
	}

	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// Up to the last batch of each session: the sections of a user
	// message are stored after its append (the client's last write).
	last := c.LastWriteSeq()
	for _, id := range []string{"with-lib", "without"} {
		cx, err := c.Context(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, cx.GetSeq())
	}
	if err := n.WaitProjected(sctx, last); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{DataDir: data}}, &out); err != nil {
		t.Fatalf("replay verify across a library update: %v\n%s", err, out.String())
	}
	for _, at := range []struct {
		seq       uint64
		want, not string
	}{{inFlight, "Use bind parameters.", "always"}, {0, "Use bind parameters, always.", "Use bind parameters.\\n"}} {
		out.Reset()
		if err := replay.Inspect(ctx, replay.InspectConfig{Conn: replay.Conn{DataDir: data}, SessionID: "with-lib", AtSeq: at.seq, JSON: true}, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), at.want) || strings.Contains(out.String(), at.not) {
			t.Fatalf("replay inspect at seq %d: want %q, not %q:\n%s", at.seq, at.want, at.not, out.String())
		}
	}
}
