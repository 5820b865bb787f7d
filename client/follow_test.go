package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestFollowThroughTheService watches an agent's memory through the watch
// endpoint (no JetStream access): the stored changes after fromSeq arrive in
// order with values decompressed, a change made while following arrives
// too, another agent's changes never do, and cancelling ends the watch
// (goleak in TestMain checks nothing is left).
func TestFollowThroughTheService(t *testing.T) {
	nc := startForTest(t)
	c := client.New(nc)
	ctx := context.Background()
	big := make([]byte, 4096) // compressed in the log
	for i := range big {
		big[i] = 'a' + byte(i%3)
	}
	var seqs []uint64
	for i, v := range [][]byte{[]byte("v1"), big, []byte("v3")} {
		r, err := c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: v})
		if err != nil {
			t.Fatal(i, err)
		}
		seqs = append(seqs, r.GetResult().GetSeq())
		if _, err := c.Put(ctx, client.Agent("a2"), &memoryv1.PutEntryRequest{Key: "other", Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := c.Follow(wctx, client.FollowScope(client.Agent("a1")), seqs[0])
	if err != nil {
		t.Fatal(err)
	}
	next := func() client.Change {
		t.Helper()
		select {
		case ch, ok := <-w.Changes():
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			return ch
		case <-time.After(10 * time.Second):
			t.Fatal("no change within 10s")
		}
		return client.Change{}
	}
	for i, want := range seqs[1:] {
		ch := next()
		if ch.Seq != want || ch.ID != "a1" {
			t.Fatalf("change %d: seq %d of %s, want %d of a1", i, ch.Seq, ch.ID, want)
		}
		ev := ch.Events[0].(*memoryv1.EntryChanged)
		if i == 0 && string(ev.GetEntry().GetValue()) != string(big) {
			t.Fatal("large value not decompressed")
		}
	}
	live, err := c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("live")})
	if err != nil {
		t.Fatal(err)
	}
	if ch := next(); ch.Seq != live.GetResult().GetSeq() {
		t.Fatalf("live change seq %d, want %d", ch.Seq, live.GetResult().GetSeq())
	}
	cancel()
	for range w.Changes() {
	}
	if err := w.Err(); err != nil {
		t.Fatalf("cancelled watch: %v", err)
	}
}
