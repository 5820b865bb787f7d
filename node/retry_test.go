package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// startAt starts a node on dataDir (a restart when it was used before).
func startAt(t *testing.T, dataDir string, window time.Duration) (*node.Node, *client.Client) {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dataDir, "127.0.0.1:-1", ""
	cfg.DuplicateWindow = window
	n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		_ = n.Shutdown(context.Background())
	})
	return n, client.New(nc)
}

// TestRetryOfAnOldCommandIsADuplicate: append X, then 600 more commands to
// the same session (past the model's window of 64 and the actor's ring of
// 512, so the projection's command index answers), then retry X with the
// same command id: inside JetStream's dedupe window, after it, and after a
// node restart. Every retry answers duplicate with X's original sequence and
// version, and X is stored exactly once (the session's message count and the
// swap show one copy). The duplicate carries X's original reply in full
// (message ids, tokens), and X's command id with another payload is a 409
// naming command_id: the digest kept beside the id in the projection's
// command index (X), in the model's window and the actor's ring (the last
// filler, recent), and after the restart in the snapshot's window.
func TestRetryOfAnOldCommandIsADuplicate(t *testing.T) {
	const window = 300 * time.Millisecond
	dir := t.TempDir()
	n, c := startAt(t, dir, window)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s", &memoryv1.CreateSessionRequest{UserId: "u", MaxContextTokens: 100000}); err != nil {
		t.Fatal(err)
	}
	x := &memoryv1.AppendRequest{CommandId: "cmd-x", Messages: []*memoryv1.MessageInput{
		{Role: memoryv1.Role_ROLE_USER, Content: "the one message that must be stored once"}}}
	first, err := c.Append(ctx, "s", x)
	if err != nil {
		t.Fatal(err)
	}
	const more = 600
	var last *memoryv1.AppendRequest
	var lastReply *memoryv1.AppendReply
	for i := 0; i < more; i++ {
		last = &memoryv1.AppendRequest{CommandId: fmt.Sprintf("filler-%d", i), Messages: []*memoryv1.MessageInput{
			{Role: memoryv1.Role_ROLE_USER, Content: "filler"}}}
		if lastReply, err = c.Append(ctx, "s", last); err != nil {
			t.Fatal(err)
		}
	}
	retry := func(when string, c *client.Client, req *memoryv1.AppendRequest, orig *memoryv1.AppendReply) {
		t.Helper()
		got, err := c.Append(ctx, "s", req)
		if err != nil {
			t.Fatalf("%s: retry of %s: %v", when, req.GetCommandId(), err)
		}
		r, want := got.GetResult(), orig.GetResult()
		if !r.GetDuplicate() || r.GetSeq() != want.GetSeq() || r.GetVersion() != want.GetVersion() ||
			!slices.Equal(got.GetMessageIds(), orig.GetMessageIds()) || !slices.Equal(got.GetTokens(), orig.GetTokens()) {
			t.Fatalf("%s: retry of %s = %v, want the original reply %v marked duplicate", when, req.GetCommandId(), got, orig)
		}
		other := proto.Clone(req).(*memoryv1.AppendRequest)
		other.Messages[0].Content += " (changed)"
		_, err = c.Append(ctx, "s", other)
		if client.Code(err) != 409 || !strings.Contains(err.Error(), "command_id") {
			t.Fatalf("%s: %s with another payload: %v, want 409 naming command_id", when, req.GetCommandId(), err)
		}
	}
	check := func(when string, c *client.Client) {
		t.Helper()
		retry(when, c, x, first)
		retry(when, c, last, lastReply)
		info, err := c.Get(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if info.GetTotalMessages() != more+1 {
			t.Fatalf("%s: session holds %d messages, want %d (X once)", when, info.GetTotalMessages(), more+1)
		}
	}
	check("inside the dedupe window", c)
	time.Sleep(2 * window)
	check("after the dedupe window", c)
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, c2 := startAt(t, dir, window)
	check("after a restart", c2)
}
