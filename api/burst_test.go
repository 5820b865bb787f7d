package api_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// A burst of large scope entries, then a read that waits for the last one
// (min_seq): the projection keeps up with what the log acknowledges, so the
// read answers within the service's min_seq bound (api.Config.MinSeqWait,
// 2 s by default) instead of a 503.

const (
	burstPuts = 500
	burstKeys = 50 // keys rewritten in turn: every put after the first 50 replaces a document
)

// burst puts n entries of size bytes of text into scope, one at a time, and
// returns the stream sequence of the last one and when it was acknowledged.
func burst(tb testing.TB, c *client.Client, sc client.Scope, n, size int) (last uint64, acked time.Time) {
	tb.Helper()
	ctx := context.Background()
	data := textData(size + 4096)
	for i := range n {
		off := (i * 61) % 4096 // each value differs
		r, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{
			Key: fmt.Sprintf("doc-%d", i%burstKeys), Value: data[off : off+size], ContentType: "text/plain",
		})
		if err != nil {
			tb.Fatalf("put %d: %v", i, err)
		}
		last = r.GetResult().GetSeq()
	}
	return last, time.Now()
}

// TestMinSeqAfterLargeBurst: after 500 puts of 100 KB, a search that waits
// for the last put (min_seq) answers, within the service's 2 s bound, and
// finds it.
func TestMinSeqAfterLargeBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("50 MB of puts")
	}
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	waitServing(t, c)
	sc := client.Agent("burst")
	last, _ := burst(t, c, sc, burstPuts, 100<<10)
	start := time.Now()
	reply, err := c.SearchEntries(context.Background(), sc, &memoryv1.SearchEntriesRequest{Query: "shipped customer", MinSeq: last})
	if err != nil {
		t.Fatalf("search with min_seq %d after %s: %v", last, time.Since(start), err)
	}
	if reply.GetAppliedSeq() < last || len(reply.GetHits()) == 0 {
		t.Fatalf("applied %d (want ≥ %d), %d hits", reply.GetAppliedSeq(), last, len(reply.GetHits()))
	}
	t.Logf("min_seq read answered %s after the last ack", time.Since(start))
}

// BenchmarkScopeBurst: bursts of 500 puts of one size (1 KB, 100 KB), one
// client, one put at a time. Reported: acked/s (puts acknowledged per
// second), searchable/s (puts per second until the projection applied the
// last one), behind-ms (from the last acknowledgement until then) and
// minseq-ms (a search with min_seq of the last put, sent right after its
// acknowledgement: its answer time).
func BenchmarkScopeBurst(b *testing.B) {
	for _, size := range []int{1 << 10, 100 << 10} {
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			n, nc := node.StartForTest(b, nil)
			c := client.New(nc)
			waitServing(b, c)
			var acked, searchable, behind, minseq time.Duration
			i := 0
			for b.Loop() {
				i++
				sc := client.Agent(fmt.Sprintf("burst-%d", i))
				start := time.Now()
				last, ackedAt := burst(b, c, sc, burstPuts, size)
				q := time.Now()
				if _, err := c.SearchEntries(context.Background(), sc, &memoryv1.SearchEntriesRequest{Query: "shipped", MinSeq: last}); err != nil {
					b.Logf("min_seq read: %v", err)
				}
				minseq += time.Since(q)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := n.WaitProjected(ctx, last); err != nil {
					b.Fatal(err)
				}
				cancel()
				done := time.Now()
				acked += ackedAt.Sub(start)
				searchable += done.Sub(start)
				behind += done.Sub(ackedAt)
			}
			puts := float64(i * burstPuts)
			b.ReportMetric(puts/acked.Seconds(), "acked/s")
			b.ReportMetric(puts/searchable.Seconds(), "searchable/s")
			b.ReportMetric(float64(behind.Milliseconds())/float64(i), "behind-ms")
			b.ReportMetric(float64(minseq.Milliseconds())/float64(i), "minseq-ms")
		})
	}
}

// TestLargeValueIndexCap: a textual value past the index cap is stored and
// read back whole; search finds the words of its first 8 KiB, not those
// after them, and the put reply and the hit say how many bytes are not
// searchable.
func TestLargeValueIndexCap(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	waitServing(t, c)
	ctx := context.Background()
	sc := client.Agent("cap")
	head := strings.Repeat("pelican ", sharedmem.MaxIndexedValueBytes/8) // exactly the cap
	value := []byte(head + strings.Repeat("flamingo ", 1000))
	r, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: "birds", Value: value, ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	// The cut is at head's last space: the first word past the cap is not
	// cut in two.
	if got, want := r.GetUnindexedBytes(), uint32(len(value)-len(head)+1); got != want {
		t.Fatalf("put reply: unindexed_bytes %d, want %d", got, want)
	}
	small, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: "small", Value: []byte("pelican"), ContentType: "text/plain"})
	if err != nil || small.GetUnindexedBytes() != 0 {
		t.Fatalf("small put: %v, unindexed_bytes %d", err, small.GetUnindexedBytes())
	}
	last := small.GetResult().GetSeq()
	hits, err := c.SearchEntries(ctx, sc, &memoryv1.SearchEntriesRequest{Query: "pelican", MinSeq: last})
	if err != nil || len(hits.GetHits()) != 2 {
		t.Fatalf("search pelican: %v, %d hits", err, len(hits.GetHits()))
	}
	for _, h := range hits.GetHits() {
		want := uint32(0)
		if h.GetEntry().GetKey() == "birds" {
			want = r.GetUnindexedBytes()
			if !bytes.Equal(h.GetEntry().GetValue(), value) {
				t.Fatalf("hit value: %d bytes, want the whole %d", len(h.GetEntry().GetValue()), len(value))
			}
		}
		if h.GetUnindexedBytes() != want {
			t.Fatalf("hit %s: unindexed_bytes %d, want %d", h.GetEntry().GetKey(), h.GetUnindexedBytes(), want)
		}
	}
	hits, err = c.SearchEntries(ctx, sc, &memoryv1.SearchEntriesRequest{Query: "flamingo", MinSeq: last})
	if err != nil || len(hits.GetHits()) != 0 {
		t.Fatalf("search flamingo (past the cap): %v, %d hits, want none", err, len(hits.GetHits()))
	}
	got, err := c.GetEntry(ctx, sc, "birds", 0)
	if err != nil || !bytes.Equal(got.GetValue(), value) {
		t.Fatalf("get: %v, %d bytes, want the whole %d", err, len(got.GetValue()), len(value))
	}
}

// BenchmarkSmallBehindLarge: one client puts a 1 KB entry and reads it back
// by search with min_seq (read-your-writes), alone and while another client
// puts 100 KB entries as fast as it is acknowledged (same run). Reported:
// the min_seq read's p50-µs and p99-µs (how long a small write waits for
// the projection behind large ones) and 503-% (reads that gave up at the
// service's 2 s bound).
func BenchmarkSmallBehindLarge(b *testing.B) {
	for _, behind := range []bool{false, true} {
		name := "alone"
		if behind {
			name = "behind-100KB"
		}
		b.Run(name, func(b *testing.B) {
			_, nc := node.StartForTest(b, nil)
			c := client.New(nc)
			waitServing(b, c)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				data := textData(100<<10 + 4096)
				for i := 0; behind && ctx.Err() == nil; i++ {
					off := (i * 61) % 4096
					_, _ = c.Put(ctx, client.Agent("large"), &memoryv1.PutEntryRequest{
						Key: fmt.Sprintf("doc-%d", i%burstKeys), Value: data[off : off+100<<10], ContentType: "text/plain"})
				}
			}()
			defer func() { cancel(); <-done }()
			small := client.Agent("small")
			var lat []time.Duration
			begin, i, failed := time.Now(), 0, 0
			for b.Loop() {
				r, err := c.Put(ctx, small, &memoryv1.PutEntryRequest{Key: fmt.Sprintf("note-%d", i%burstKeys), Value: benchEntryValue(i), ContentType: "text/plain"})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := c.SearchEntries(ctx, small, &memoryv1.SearchEntriesRequest{Query: "orders", MinSeq: r.GetResult().GetSeq()}); err != nil {
					if client.Code(err) != 503 {
						b.Fatal(err)
					}
					failed++ // the projection did not apply it within the service's bound
				}
				lat = append(lat, time.Since(start))
				i++
			}
			reportLatency(b, lat, time.Since(begin), "")
			b.ReportMetric(100*float64(failed)/float64(i), "503-%")
		})
	}
}
