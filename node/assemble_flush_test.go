package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// An append's context assembly searches only once the append's answer has
// left the node (Request.Flush): searched at once, the searches' CPU kept
// the answer from the client (a millisecond at the median, ten at the 99th
// percentile, on two cores). A flush that does not return in time delays
// them no longer than its bound: the sections still come.
func TestAppendSearchesAfterItsAnswerLeft(t *testing.T) {
	n, nc := StartForTest(t, nil)
	c := client.New(nc).WithTimeout(10 * time.Second)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
		t.Fatal(err)
	}
	searched := func() uint64 {
		var m dto.Metric
		if err := n.MetricsForTest().Candidates.WithLabelValues("memory").(prometheus.Histogram).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	before := searched()
	replied := make(chan []byte, 1)
	var written atomic.Bool
	type flushSeen struct {
		afterReply        bool
		searchedMeanwhile bool
	}
	flushed := make(chan flushSeen, 1)
	hdr := nats.Header{}
	hdr.Set("Content-Type", api.ContentTypeJSON)
	n.ServeForTest(&api.Request{Subject: "mem.v1.session.s1.append", Header: hdr,
		Data:  []byte(`{"messages":[{"role":"ROLE_USER","content":"which badge colour did I pick?"}]}`),
		Write: func(data []byte, _ nats.Header) { written.Store(true); replied <- data },
		Flush: func(ctx context.Context) error {
			seen := flushSeen{afterReply: written.Load()}
			<-ctx.Done() // the answer never leaves: the searches wait the bound out
			seen.searchedMeanwhile = searched() != before
			flushed <- seen
			return ctx.Err()
		}})
	select {
	case <-replied:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the append")
	}
	select {
	case seen := <-flushed:
		if !seen.afterReply {
			t.Error("Flush was called before the append's answer was written")
		}
		if seen.searchedMeanwhile {
			t.Error("the assembler searched while the append's answer had not left")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the append's searches never waited for its answer to leave (Flush not called)")
	}
	cx, err := c.Context(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if searched() == before {
		t.Fatalf("no search after the flush's bound ran out; context: %v", cx)
	}
}
