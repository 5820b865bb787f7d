package client_test

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// What a client keeps of its writes (their sequence and tokens) and sends
// on its reads by itself goes stale when the log changes layout
// (`replay migrate-log --partitions`): the node refuses it (400 min_seq or
// consistency). The client then forgets it and reads without; what a
// caller passes itself is still refused.
func TestClientForgetsWhatTheLogNoLongerHas(t *testing.T) {
	_, nc := node.StartForTest(t, func(c *node.Config) { c.LogPartitions = 6 })
	waitServing(nc)
	c := client.New(nc)
	ctx := context.Background()
	appendN(t, c, "a", true, 2)
	for _, stale := range []struct {
		seq   uint64
		token string
	}{{0, "k1:p0:3"}, {1 << 40, ""}} {
		client.KeepForTest(c, stale.seq, stale.token)
		rep, err := c.Search(ctx, "a", &memoryv1.SearchRequest{Query: "message"})
		if err != nil || len(rep.GetHits()) == 0 {
			t.Fatalf("kept %d %q: search: %v (%d hits), want the hits without the stale values", stale.seq, stale.token, err, len(rep.GetHits()))
		}
		if got := c.LastWriteConsistency(); got == stale.token && got != "" {
			t.Fatalf("the refused token %q is still kept", got)
		}
	}
	if _, err := c.Search(ctx, "a", &memoryv1.SearchRequest{Query: "message", Consistency: "k1:p0:3"}); client.Code(err) != 400 {
		t.Fatalf("a stale token the caller passed: %v, want 400", err)
	}
}
