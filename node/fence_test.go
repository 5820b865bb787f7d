package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

func dispatchAppend(t *testing.T, n *node.Node, id, cmd, text string) (*memoryv1.AppendReply, error) {
	t.Helper()
	type result struct {
		m   proto.Message
		err error
	}
	ch := make(chan result, 1)
	err := n.DirectoryForTest().Dispatch(id, nil, &memoryv1.AppendRequest{CommandId: cmd,
		Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT, Content: text}}},
		actors.ReplyFunc(func(m proto.Message, err error) { ch <- result{m, err} }))
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return r.m.(*memoryv1.AppendReply), nil
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
		return nil, nil
	}
}

// TestPausedOwnerMeetsTheFence: node a serves a session and holds its state;
// a is paused past its lease (simulated: the request below passed a's
// ownership check before the pause), node b took the partition and
// appended. When a resumes, its append carries the sequence a last knew:
// the log refuses it (expected-last-subject-sequence), a's actor reloads
// and decides again on top of b's append — a conflict, never a fork.
func TestPausedOwnerMeetsTheFence(t *testing.T) {
	a, b, nc := startPair(t)
	var id string
	for deadline, i := time.Now().Add(10*time.Second), 0; id == ""; i++ {
		if s := fmt.Sprintf("s%d", i%64); a.Serves(s) && !b.Serves(s) && i >= 64 {
			id = s
		}
		if time.Now().After(deadline) {
			t.Fatal("no session served by a")
		}
		if i%64 == 63 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	first, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "one"})
	if err != nil {
		t.Fatal(err)
	}
	// b, the new owner, appends; a's actor still holds the state before it.
	byB, err := dispatchAppend(t, b, id, "b-1", "two")
	if err != nil {
		t.Fatal(err)
	}
	if byB.GetResult().GetVersion() != first.GetResult().GetVersion()+1 {
		t.Fatalf("b appended at version %d after %d", byB.GetResult().GetVersion(), first.GetResult().GetVersion())
	}
	conflicts := func() float64 {
		mfs, err := a.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "agentmem_append_conflicts_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return 0
	}
	before := conflicts()
	byA, err := dispatchAppend(t, a, id, "a-late", "three")
	if err != nil {
		t.Fatal(err)
	}
	if got := conflicts() - before; got != 1 {
		t.Fatalf("a's late append met %v fence conflicts, want 1", got)
	}
	if byA.GetResult().GetVersion() != byB.GetResult().GetVersion()+1 {
		t.Fatalf("a's append after reloading is at version %d, want %d (on top of b's)", byA.GetResult().GetVersion(), byB.GetResult().GetVersion()+1)
	}
	cx, err := c.Context(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range cx.GetMessages() {
		texts = append(texts, m.GetContent())
	}
	if fmt.Sprint(texts) != "[one two three]" {
		t.Fatalf("the session holds %q, want one, two, three in order", texts)
	}

	// replay stats shows both nodes, their partitions and projection lag.
	var out strings.Builder
	rep, err := replay.Stats(ctx, replay.StatsConfig{Conn: replay.Conn{NATSURL: a.ClientURL()}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if c := rep.Cluster; c == nil || len(c.Nodes) != 2 || len(c.Leases) != 64 {
		t.Fatalf("cluster status %+v: want 2 nodes and 64 leases", c)
	}
	for _, want := range []string{"cluster: 2 live nodes, 64 of 64 partitions leased", "node a:", "node b:", "partitions of a", "(lag "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stats lacks %q", want)
		}
	}
}

// TestSecondAggregateOnAnotherNode: resolve reads the user scope of a
// session, publish writes into it; with the session on one node and the
// user scope on the other, both are calls on the other node's actor (never
// a stale copy on the session's node).
func TestSecondAggregateOnAnotherNode(t *testing.T) {
	a, b, nc := startPair(t)
	pick := func(n *node.Node, prefix string) string {
		for i := 0; ; i++ {
			if id := fmt.Sprintf("%s%d", prefix, i); n.Serves(id) {
				return id
			}
		}
	}
	sid, user := pick(a, "s"), pick(b, "u")
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, sid, &memoryv1.CreateSessionRequest{UserId: user}); err != nil {
		t.Fatal(err)
	}
	for v := range 3 {
		if _, err := c.Put(ctx, client.User(user), &memoryv1.PutEntryRequest{Key: "pref", Value: fmt.Appendf(nil, "dark-%d", v)}); err != nil {
			t.Fatal(err)
		}
		r, err := c.Resolve(ctx, sid, "pref")
		if err != nil || !r.GetFound() || string(r.GetEntry().GetValue()) != fmt.Sprintf("dark-%d", v) {
			t.Fatalf("resolve on %s (user scope on %s): %v, %v; want dark-%d", a.NodeID(), b.NodeID(), r, err, v)
		}
	}
	if _, err := c.Put(ctx, client.SessionScope(sid), &memoryv1.PutEntryRequest{Key: "note", Value: []byte("keep")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, sid, "note", "user"); err != nil {
		t.Fatalf("publish into the user scope on the other node: %v", err)
	}
	e, err := c.GetEntry(ctx, client.User(user), "note", 0)
	if err != nil || string(e.GetValue()) != "keep" {
		t.Fatalf("published entry: %v, %v", e, err)
	}
}

// startPair starts node a (embedding NATS) and node b on a's server, and
// waits for their partitions to settle; nc is a client connection.
func startPair(t *testing.T) (a, b *node.Node, nc *nats.Conn) {
	t.Helper()
	a, nc = node.StartForTest(t, func(c *node.Config) { c.NodeID = "a" })
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSURL, cfg.HTTPAddr, cfg.NodeID = t.TempDir(), a.ClientURL(), "", "b"
	b, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	waitSettled(t, a, b)
	return a, b, nc
}
