package node_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// filesHolding returns the files under dir whose bytes contain marker.
func filesHolding(t *testing.T, dir, marker string) []string {
	t.Helper()
	var hits []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(marker)) {
			rel, _ := filepath.Rel(dir, p)
			hits = append(hits, rel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestEraseThenCompactLeavesNoByte is issue 19's proof end to end: marker
// words in a session's messages (a 1,200-token budget: compressed into
// summaries too) and its assembled context, its session-scope entry, a
// tool result stored as large data, and an entry of its user's scope; the session and the user are erased
// through the API; with the node stopped the markers are still in the
// files (the test can fail), `replay compact` leaves them in none, and the
// node starts again on the directory and `replay verify` passes. A kept
// session's marker stays.
func TestEraseThenCompactLeavesNoByte(t *testing.T) {
	const gone, kept = "platypusgone", "echidnakept"
	data := filepath.Join(t.TempDir(), "data")
	start := func() (*node.Node, *client.Client) {
		n, nc := node.StartForTest(t, func(c *node.Config) { c.DataDir = data })
		return n, client.New(nc)
	}
	n, c := start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range []struct{ id, user, marker string }{{"e1", "u1", gone}, {"k1", "u2", kept}} {
		if _, err := c.CreateSession(ctx, s.id, &memoryv1.CreateSessionRequest{UserId: s.user, MaxContextTokens: 1200, ReservedOutputTokens: 200}); err != nil {
			t.Fatal(err)
		}
		for i := range 12 { // enough to compress: summaries hold the words too
			if _, err := c.AppendMessages(ctx, s.id,
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: strings.Repeat("the "+s.marker+" report number "+string(rune('a'+i))+" ", 8)},
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "noted " + s.marker}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.AppendMessages(ctx, s.id,
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "call_1", Name: "fetch", Arguments: "{}"}}},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call_1", Content: strings.Repeat("blob of "+s.marker+" ", 12<<10)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Put(ctx, client.SessionScope(s.id), &memoryv1.PutEntryRequest{Key: "draft", Value: []byte("draft " + s.marker)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Put(ctx, client.User(s.user), &memoryv1.PutEntryRequest{Key: "pref", Value: []byte("likes " + s.marker)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Context(ctx, s.id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.EraseUser(ctx, "u1", "test"); err != nil {
		t.Fatalf("erase user u1: %v", err)
	}
	if err := n.WaitProjected(ctx, c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if hits := filesHolding(t, data, gone); len(hits) == 0 {
		t.Fatal("before compact the erased marker is in no file: the test would prove nothing")
	} else {
		t.Logf("before compact %q is in %v", gone, hits)
	}
	var out bytes.Buffer
	if _, err := replay.Compact(ctx, replay.CompactConfig{Conn: replay.Conn{DataDir: data}}, &out); err != nil {
		t.Fatalf("replay compact: %v\n%s", err, out.String())
	}
	t.Logf("compact:\n%s", out.String())
	if hits := filesHolding(t, data, gone); len(hits) > 0 {
		t.Errorf("after erase and compact %q is still in %v", gone, hits)
	}
	if hits := filesHolding(t, data, kept); len(hits) == 0 {
		t.Errorf("the kept session's %q is in no file after compact", kept)
	}
	out.Reset()
	if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{DataDir: data}}, &out); err != nil {
		t.Fatalf("replay verify after compact: %v\n%s", err, out.String())
	}
	_, c = start()
	cx, err := c.Context(ctx, "k1")
	if err != nil || len(cx.GetMessages()) == 0 {
		t.Fatalf("the kept session after compact: %v", err)
	}
}
