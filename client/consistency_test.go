package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestClientKeepsWriteTokens: with the log in six partitions every write
// reply carries its token, the client keeps the highest per partition and
// sends them with its queries (which then read its writes).
func TestClientKeepsWriteTokens(t *testing.T) {
	_, nc := node.StartForTest(t, func(c *node.Config) { c.LogPartitions = 6; c.LogWindow = 0 })
	waitServing(nc)
	c := client.New(nc)
	ctx := context.Background()
	var tokens []string
	for i := range 4 {
		id := fmt.Sprintf("ct%d", i)
		cr, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "ctu"})
		if err != nil {
			t.Fatal(err)
		}
		r := cr.GetResult()
		if want := consistency.Format(6, events.LogPartition(id, 6), r.GetSeq()); r.GetConsistency() != want {
			t.Fatalf("create %s: token %q, want %q", id, r.GetConsistency(), want)
		}
		tokens = append(tokens, r.GetConsistency())
	}
	put, err := c.Put(ctx, client.User("ctu"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	if want := consistency.Format(6, events.LogPartition("ctu", 6), put.GetResult().GetSeq()); put.GetResult().GetConsistency() != want {
		t.Fatalf("put: token %q, want %q", put.GetResult().GetConsistency(), want)
	}
	tokens = append(tokens, put.GetResult().GetConsistency())
	if got, want := c.LastWriteConsistency(), consistency.Merge(tokens...); got != want || got == "" {
		t.Fatalf("client tokens %q, want %q", got, want)
	}
	req := &memoryv1.ListSessionsRequest{UserId: "ctu"}
	list, err := c.ListSessions(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetConsistency() != c.LastWriteConsistency() || len(list.GetSessions()) != 4 {
		t.Fatalf("list sent consistency %q (client's %q), got %d sessions", req.GetConsistency(), c.LastWriteConsistency(), len(list.GetSessions()))
	}
	// Given explicitly, a token is sent as given (and nothing else).
	req = &memoryv1.ListSessionsRequest{UserId: "ctu", Consistency: tokens[0]}
	if _, err := c.ListSessions(ctx, req); err != nil || req.GetMinSeq() != 0 || req.GetConsistency() != tokens[0] {
		t.Fatalf("explicit token: %v, sent min_seq %d consistency %q", err, req.GetMinSeq(), req.GetConsistency())
	}
}
