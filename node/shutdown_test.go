package node_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// backlogValue is the value of put i: ~100 KB of text, different for each.
func backlogValue(i int) []byte {
	var b bytes.Buffer
	for r := 0; b.Len() < 100<<10; r++ {
		fmt.Fprintf(&b, "put %d row %d: order %d shipped to customer %d\n", i, r, (i*131+r)*7919%100000, r%997)
	}
	return b.Bytes()[:100<<10]
}

// TestShutdownWithProjectionBacklog: a node whose projector has a large
// backlog (a projection file removed, the log replayed into a new one: 200
// scope entries of 100 KB) shuts down within its drain timeout — the
// projector stops in the middle of its batch, which rolls back — and a
// node started again on the same data dir resumes from the checkpoint and
// projects everything, exactly once (every key at its last version, with
// its value).
func TestShutdownWithProjectionBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("20 MB of puts")
	}
	const (
		puts  = 200
		keys  = 40
		drain = 2 * time.Second
		// margin: nats-server's own shutdown and the actors' snapshots, on
		// a loaded machine under -race.
		margin = 3 * time.Second
	)
	dir := t.TempDir()
	ctx := context.Background()
	sc := client.Agent("backlog")
	first := startStreamNode(t, dir, nil)
	var last uint64
	want := make(map[string][]byte)
	version := make(map[string]uint64)
	for i := range puts {
		key := fmt.Sprintf("doc-%d", i%keys)
		r, err := first.c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: key, Value: backlogValue(i), ContentType: "text/plain"})
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		last, want[key], version[key] = r.GetResult().GetSeq(), backlogValue(i), r.GetEntry().GetVersion()
	}
	first.shutdown(t)
	path := filepath.Join(dir, node.ProjectionFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}

	// A commit (with its fsync) per 8 records: the backlog lasts however
	// fast the machine applies (with batches of 512 a fast one replayed it
	// all before Shutdown was called), and a batch is still cut short.
	busy := startStreamNode(t, dir, func(c *node.Config) { c.ProjectorBatch = 8 })
	if err := busy.n.WaitProjected(ctx, 1); err != nil { // the projector is in its first batches
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, drain)
	defer cancel()
	start := time.Now()
	err := busy.n.Shutdown(sctx)
	took := time.Since(start)
	t.Logf("shutdown with a backlog took %s (drain %s): %v", took, drain, err)
	if took > drain+margin {
		t.Fatalf("shutdown took %s, drain timeout %s", took, drain)
	}
	if err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	applied := appliedSeq(t, path)
	if applied >= last {
		t.Fatalf("the projector had applied %d of %d at shutdown: no backlog, the test proves nothing", applied, last)
	}
	t.Logf("applied %d of %d at shutdown", applied, last)

	again := startStreamNode(t, dir, nil)
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := again.n.WaitProjected(wctx, last); err != nil {
		t.Fatal(err)
	}
	again.shutdown(t)
	st, err := projections.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.AppliedSeq(); got != last {
		t.Fatalf("applied %d after the restart, want %d", got, last)
	}
	for key, v := range want {
		e, ok, err := st.Entry("agent", "backlog", key)
		if err != nil || !ok {
			t.Fatalf("entry %s: %v (found %v)", key, err, ok)
		}
		if e.GetVersion() != version[key] || !bytes.Equal(e.GetValue(), v) {
			t.Fatalf("entry %s: version %d (want %d), value of %d bytes matches: %v",
				key, e.GetVersion(), version[key], len(e.GetValue()), bytes.Equal(e.GetValue(), v))
		}
		h, err := st.EntryHistory("agent", "backlog", key)
		if err != nil || uint64(len(h)) != version[key] {
			t.Fatalf("history of %s: %v, %d versions, want %d", key, err, len(h), version[key])
		}
	}
	hits, err := st.SearchEntries("agent", "backlog", &memoryv1.SearchEntriesRequest{Query: "shipped customer", Limit: 20})
	if err != nil || len(hits) != 20 {
		t.Fatalf("search: %v, %d hits", err, len(hits))
	}
}

// appliedSeq is the checkpoint of the projection file at path.
func appliedSeq(t testing.TB, path string) uint64 {
	t.Helper()
	st, err := projections.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return st.AppliedSeq()
}

// BenchmarkShutdown: Shutdown (2 s drain) of a node whose projector replays
// a backlog (200 scope entries of 100 KB, the projection file removed, once
// the first record is applied), beside the same node's shutdown once it has caught up
// (same run). Reported: shutdown-ms, and for the backlog applied-% (of the
// log, at shutdown).
func BenchmarkShutdown(b *testing.B) {
	const puts = 200
	dir := b.TempDir()
	ctx := context.Background()
	cfg := func() node.Config {
		cfg := node.DefaultConfig()
		cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
		return cfg
	}
	n, nc := node.StartForTest(b, func(c *node.Config) { *c = cfg() })
	c := client.New(nc)
	var last uint64
	for i := range puts {
		r, err := c.Put(ctx, client.Agent("backlog"), &memoryv1.PutEntryRequest{Key: fmt.Sprintf("doc-%d", i%40), Value: backlogValue(i), ContentType: "text/plain"})
		if err != nil {
			b.Fatal(err)
		}
		last = r.GetResult().GetSeq()
	}
	nc.Close()
	if err := n.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, node.ProjectionFile)
	for _, backlog := range []bool{true, false} {
		name := "caught-up"
		if backlog {
			name = "backlog"
		}
		b.Run(name, func(b *testing.B) {
			var took time.Duration
			var applied uint64
			for b.Loop() {
				b.StopTimer()
				if backlog {
					if err := os.Remove(path); err != nil {
						b.Fatal(err)
					}
				}
				n, err := node.Start(ctx, cfg(), slog.New(slog.DiscardHandler))
				if err != nil {
					b.Fatal(err)
				}
				upTo := last
				if backlog {
					upTo = 1 // the projector is in its first batches
				}
				if err := n.WaitProjected(ctx, upTo); err != nil {
					b.Fatal(err)
				}
				sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				b.StartTimer()
				start := time.Now()
				err = n.Shutdown(sctx)
				took += time.Since(start)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				applied += appliedSeq(b, path)
				b.StartTimer()
			}
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "shutdown-ms")
			if backlog {
				b.ReportMetric(100*float64(applied)/float64(b.N)/float64(last), "applied-%")
			}
		})
	}
}

// TestShutdownPastItsDrainClosesTheProjection: a node whose drain ran out
// (here: a context ended before Shutdown began) still cancels its
// background loops and, once they return within the grace, closes its
// projection file, so a node started again on the data dir in the same
// process opens it. Before, the file stayed open (bbolt's lock held) and
// the restart timed out opening it.
func TestShutdownPastItsDrainClosesTheProjection(t *testing.T) {
	dir := t.TempDir()
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	n, err := node.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := client.New(nc).CreateSession(context.Background(), "s1", &memoryv1.CreateSessionRequest{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = n.Shutdown(ctx) // its errors say what the drain did not finish
	done := make(chan error, 1)
	go func() {
		s, err := projections.Open(filepath.Join(dir, node.ProjectionFile))
		if err == nil {
			err = s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the projection after a shutdown past its drain: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the projection file is still held after a shutdown past its drain")
	}
}
