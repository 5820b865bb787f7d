package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestContextCache: the client asks with the version it holds; an unchanged
// context comes back "not modified" and the held reply is returned; after
// an append the new context is returned and held; each format is held
// apart.
func TestContextCache(t *testing.T) {
	// The client's own connection, with its own inbox prefix: a copy of
	// every reply the service sends it goes to sub, and wire says whether
	// the last call's reply was "not modified".
	nc, err := nats.Connect(startForTest(t).ConnectedUrl(), nats.CustomInboxPrefix("_INBOX.ctxcache"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("_INBOX.ctxcache.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	wire := func() (notModified bool, size int) {
		t.Helper()
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r := &memoryv1.ContextReply{}
		return proto.Unmarshal(m.Data, r) == nil && r.GetNotModified(), len(m.Data)
	}
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "cc", &memoryv1.CreateSessionRequest{SystemPrompt: "Be brief."}); err != nil {
		t.Fatal(err)
	}
	wire()
	if _, err := c.AppendMessages(ctx, "cc", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	wire()
	first, err := c.Context(ctx, "cc")
	if err != nil {
		t.Fatal(err)
	}
	if nm, _ := wire(); nm || first.GetNotModified() {
		t.Fatal("first context answered not modified")
	}
	again, err := c.Context(ctx, "cc")
	if err != nil {
		t.Fatal(err)
	}
	if nm, size := wire(); !nm || again != first || again.GetNotModified() {
		t.Fatalf("unchanged context: not modified on the wire %v (%d bytes), held reply returned %v", nm, size, again == first)
	}
	openai, err := c.ContextAs(ctx, "cc", memoryv1.ContextFormat_CONTEXT_FORMAT_OPENAI)
	if err != nil || len(openai.GetRendered().GetOpenai()) == 0 {
		t.Fatalf("openai context: %v", err)
	}
	if nm, _ := wire(); nm {
		t.Fatal("a format not held yet answered not modified")
	}
	if _, err := c.AppendMessages(ctx, "cc", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "again"}); err != nil {
		t.Fatal(err)
	}
	wire()
	changed, err := c.Context(ctx, "cc")
	if err != nil {
		t.Fatal(err)
	}
	if nm, _ := wire(); nm || changed == first || changed.GetVersion() <= first.GetVersion() {
		t.Fatalf("changed context: not modified %v, version %d after %d", nm, changed.GetVersion(), first.GetVersion())
	}
	if held, err := c.Context(ctx, "cc"); err != nil || held != changed {
		t.Fatalf("the new context is not held: %v", err)
	}
	if nm, _ := wire(); !nm {
		t.Fatal("the new context was sent again")
	}
}
