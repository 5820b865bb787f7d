package api_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestRetriedWritesAnswerTheOriginalReply: a retried entry put answers the
// entry it wrote (not the key's newest version, and not nothing, as it did
// before), and another value under its command id is a 409.
func TestRetriedWritesAnswerTheOriginalReply(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	a1 := client.Agent("a1")
	put := &memoryv1.PutEntryRequest{CommandId: "put-1", Key: "prefs/theme", Value: []byte("dark")}
	first, err := c.Put(ctx, a1, proto.Clone(put).(*memoryv1.PutEntryRequest))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, a1, &memoryv1.PutEntryRequest{Key: "prefs/theme", Value: []byte("light")}); err != nil {
		t.Fatal(err)
	}
	again, err := c.Put(ctx, a1, proto.Clone(put).(*memoryv1.PutEntryRequest))
	if err != nil {
		t.Fatal(err)
	}
	if !again.GetResult().GetDuplicate() || again.GetEntry().GetVersion() != first.GetEntry().GetVersion() ||
		string(again.GetEntry().GetValue()) != "dark" {
		t.Fatalf("retried put = %v, want a duplicate showing version %d (dark)", again, first.GetEntry().GetVersion())
	}
	put.Value = []byte("blue")
	if _, err := c.Put(ctx, a1, put); client.Code(err) != 409 {
		t.Fatalf("another value under put-1: %v, want 409", err)
	}

}
