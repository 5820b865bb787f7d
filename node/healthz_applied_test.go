package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestHealthzAppliedPartitions: with the log in six partitions, one of
// them empty, /healthz's applied_seq (the least checkpoint) stays 0 however
// much the projection applied; `applied` names each partition's checkpoint
// as a consistency token list: every partition that holds messages at its
// stream's last sequence once the projection caught up, and the list a read
// takes as `consistency`.
func TestHealthzAppliedPartitions(t *testing.T) {
	n, nc := node.StartForTest(t, partitionedEraseConfig)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	h := &healthNode{n: n, nc: nc, c: client.New(nc), js: js}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Sessions in some partitions only: at least one stays empty.
	h.session(t, "s1", "u1", 2)
	h.session(t, "s3", "u2", 2)
	pl := partitionedLog(t, js)
	lasts := make([]uint64, pl.Partitions())
	empty := false
	for i := range lasts {
		st, err := js.Stream(ctx, pl.Partition(i).Stream())
		if err != nil {
			t.Fatal(err)
		}
		lasts[i] = st.CachedInfo().State.LastSeq
		empty = empty || lasts[i] == 0
	}
	if !empty {
		t.Fatalf("every partition holds messages (%v): the test needs an empty one", lasts)
	}
	want := ""
	for i, last := range lasts {
		if last > 0 {
			want = consistency.Merge(want, consistency.Format(len(lasts), i, last))
		}
	}
	var body map[string]any
	eventually(t, "applied = every partition's last", func() (bool, string) {
		_, body = healthz(t, n)
		got, _ := body["applied"].(string)
		return got == want, "applied " + got + ", want " + want
	})
	if seq := body["applied_seq"]; seq != float64(0) {
		t.Errorf("applied_seq = %v, want 0 (an empty partition's checkpoint)", seq)
	}
	// The list is a token a read takes.
	if _, err := h.c.Search(ctx, "s1", &memoryv1.SearchRequest{Query: "turn", Consistency: want}); err != nil {
		t.Fatalf("search with consistency %q: %v", want, err)
	}
}
