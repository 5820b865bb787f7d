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

// TestPatternLibraryInAppScope: a session of app shop naming library
// "sql" takes app:shop's patterns/sql/… over the global scope's; a session
// of app crm (whose scope holds no sql library) and one without an app
// take the global one. app:shop's update reaches its session at the next
// user message (not at a tool result of the turn in flight), and when
// app:shop's library is deleted the session falls back to the global one
// at its next user message. After the node stops, replay verify accepts
// the log and replay inspect shows each turn's ROM from the log.
func TestPatternLibraryInAppScope(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	n, nc := node.StartForTest(t, func(c *node.Config) { c.DataDir = data })
	c := client.New(nc)
	ctx := context.Background()
	shop := client.App("shop")
	put := func(sc client.Scope, key, text string) {
		t.Helper()
		if _, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: key, Value: []byte(text)}); err != nil {
			t.Fatal(err)
		}
		// The projection the sessions read the libraries from has it.
		if _, err := c.SearchEntries(ctx, sc, &memoryv1.SearchEntriesRequest{Query: "rule"}); err != nil {
			t.Fatal(err)
		}
	}
	put(client.Global(), node.PatternKeyPrefix+"sql/01", "Global sql rule.")
	put(shop, node.PatternKeyPrefix+"sql/01", "Shop sql rule.")
	put(client.App("crm"), node.PatternKeyPrefix+"other/01", "Crm other rule.")
	for _, s := range []struct{ id, app string }{{"s-shop", "shop"}, {"s-crm", "crm"}, {"s-none", ""}} {
		if _, err := c.CreateSession(ctx, s.id, &memoryv1.CreateSessionRequest{App: s.app, SystemPrompt: "sys", PatternLibraries: []string{"sql"}}); err != nil {
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
		return cx.GetRomVersion(), layerText(cx, "rom")
	}
	want := func(id string, v uint32, has, not string) {
		t.Helper()
		if gv, text := romOf(id); gv != v || !strings.Contains(text, has) || strings.Contains(text, not) {
			t.Fatalf("%s: ROM v%d %q, want v%d with %q, without %q", id, gv, text, v, has, not)
		}
	}
	want("s-shop", 1, "Shop sql rule.", "Global sql rule.")
	want("s-crm", 1, "Global sql rule.", "Shop sql rule.")
	want("s-none", 1, "Global sql rule.", "Shop sql rule.")
	k, err := c.Kernel(ctx, "s-shop", nil)
	if err != nil || len(k.GetRom().GetLibraries()) != 1 || k.GetRom().GetLibraries()[0].GetScope() != "app:shop" {
		t.Fatalf("s-shop's ROM libraries: %v, %v, want sql from app:shop", k.GetRom().GetLibraries(), err)
	}

	put(shop, node.PatternKeyPrefix+"sql/01", "Shop sql rule, v2.")
	rep, err := c.AppendMessages(ctx, "s-shop", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "c1", Content: "q1 12s"})
	if err != nil {
		t.Fatal(err)
	}
	inFlight := rep.GetResult().GetSeq()
	want("s-shop", 1, "Shop sql rule.", "v2")
	if _, err := c.AppendMessages(ctx, "s-shop", userMsg("and the fix?")); err != nil {
		t.Fatal(err)
	}
	want("s-shop", 2, "Shop sql rule, v2.", "Global sql rule.")
	afterUpdate := c.LastWriteSeq()

	// app:shop's library gone: the global one from the next user message.
	if _, err := c.DeleteEntry(ctx, shop, &memoryv1.DeleteEntryRequest{Key: node.PatternKeyPrefix + "sql/01"}); err != nil {
		t.Fatal(err)
	}
	put(client.Global(), node.PatternKeyPrefix+"sql/02", "Another global rule.")
	if _, err := c.AppendMessages(ctx, "s-shop", userMsg("thanks")); err != nil {
		t.Fatal(err)
	}
	want("s-shop", 3, "Global sql rule.", "Shop sql rule")
	if k, err := c.Kernel(ctx, "s-shop", nil); err != nil || k.GetRom().GetLibraries()[0].GetScope() != "" {
		t.Fatalf("s-shop's ROM after the fallback: %v, %v, want the global scope", k.GetRom().GetLibraries(), err)
	}
	want("s-crm", 1, "Global sql rule.", "Shop sql rule.")

	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n.WaitProjected(sctx, c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{DataDir: data}}, &out); err != nil {
		t.Fatalf("replay verify across app library updates: %v\n%s", err, out.String())
	}
	for _, at := range []struct {
		seq       uint64
		want, not string
	}{{inFlight, "Shop sql rule.", "v2"}, {afterUpdate, "Shop sql rule, v2.", "Shop sql rule."}, {0, "Another global rule.", "Shop sql rule"}} {
		out.Reset()
		if err := replay.Inspect(ctx, replay.InspectConfig{Conn: replay.Conn{DataDir: data}, SessionID: "s-shop", AtSeq: at.seq, JSON: true}, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), at.want) || strings.Contains(out.String(), at.not) {
			t.Fatalf("replay inspect at seq %d: want %q, not %q:\n%s", at.seq, at.want, at.not, out.String())
		}
	}
}
