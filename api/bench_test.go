package api_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/cpustat"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Benchmarks of the API end to end: client → NATS → micro service → session
// actor → JetStream append → reply. They run on node.StartForTest: an
// embedded nats-server in this process on loopback, one replica, file
// storage, sync default (no fsync per write: survives kill -9, not power
// loss), actors with the default config (snapshot every 100 batches) and the
// node's defaults otherwise (the projector runs in the same process and
// consumes every stored batch).
//
// Latencies are recorded per operation and reported as p50-µs and p99-µs
// beside ns/op; rates as appends/s or publishes/s (wall clock).

// benchSessionOps is how many appends a benchmark session takes before the
// benchmark moves to a fresh one. With a budget of 1,000,000 tokens and
// ~50-token messages no append ever compresses, and the L1 a command is
// decided against stays at most benchSessionOps messages long, as in a
// working agent session (so ns/op does not drift with b.N).
const (
	benchSessionOps   = 500
	benchBudget       = 1_000_000
	benchWorkers      = 64
	benchRawStream    = "RAWBENCH"
	benchRawSubject   = "rawbench.x"
	benchMessageBytes = 200
)

var benchSessionSeq atomic.Int64

// benchContent is a user message of exactly benchMessageBytes bytes.
func benchContent(i int) string {
	s := fmt.Sprintf("Turn %06d: how many orders did Alice place in region 3 last quarter, and how does that compare "+
		"with Bob's orders in the same region? Include refunds, exclude cancelled orders, and group them by week. ", i)
	for len(s) < benchMessageBytes {
		s += "x"
	}
	return s[:benchMessageBytes]
}

// newBenchSessions creates n sessions with a budget that never compresses
// and returns their ids. They have the default context assembler (recall
// and memory on): each user message pays the candidate search.
func newBenchSessions(b *testing.B, c *client.Client, n int) []string {
	return newBenchSessionsWith(b, c, n, nil)
}

// newBenchSessionsWith is newBenchSessions with an assembler config
// (&AssemblyConfig{}: off).
func newBenchSessionsWith(b *testing.B, c *client.Client, n int, assembly *memoryv1.AssemblyConfig) []string {
	b.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%d", benchSessionSeq.Add(1))
		if _, err := c.CreateSession(context.Background(), ids[i], &memoryv1.CreateSessionRequest{
			UserId: "u1", SystemPrompt: "You are a data assistant.", MaxContextTokens: benchBudget, ReservedOutputTokens: 4096,
			Assembly: assembly,
		}); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// benchAppends runs n appends of one message through c, moving to the next
// of ids every benchSessionOps appends; it returns each append's latency.
func benchAppends(c *client.Client, ids []string, n int, lat []time.Duration) ([]time.Duration, error) {
	ctx := context.Background()
	for i := range n {
		id := ids[i/benchSessionOps]
		start := time.Now()
		rep, err := c.Append(ctx, id, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
			{Role: memoryv1.Role_ROLE_USER, Content: benchContent(i)},
		}})
		lat = append(lat, time.Since(start))
		if err != nil {
			return lat, fmt.Errorf("append %d to %s: %w", i, id, err)
		}
		if rep.GetCompressions() != 0 {
			return lat, fmt.Errorf("append %d to %s compressed (%d steps): the benchmark budget is too small", i, id, rep.GetCompressions())
		}
	}
	return lat, nil
}

func sessionsFor(ops int) int { return max(1, (ops+benchSessionOps-1)/benchSessionOps) }

// splitOps splits n operations over w workers (the first n%w get one more).
func splitOps(n, w int) []int {
	out := make([]int, w)
	for i := range out {
		out[i] = n / w
		if i < n%w {
			out[i]++
		}
	}
	return out
}

// benchOneClient runs b.N appends through c, serially, and reports their
// latency and rate.
func benchOneClient(b *testing.B, c *client.Client) {
	benchOneClientWith(b, c, nil)
}

func benchOneClientWith(b *testing.B, c *client.Client, assembly *memoryv1.AssemblyConfig) {
	ids := newBenchSessionsWith(b, c, sessionsFor(b.N), assembly)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	lat, err := benchAppends(c, ids, b.N, lat)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	reportLatency(b, lat, elapsed, "appends/s")
}

// benchNodeWithRaw starts a node (mutate adjusts its config), waits until
// it serves, and creates beside its log the raw stream (benchRawStream,
// file storage) that the raw publish figures write to.
func benchNodeWithRaw(b *testing.B, mutate func(*node.Config)) (*node.Node, *client.Client, jetstream.JetStream) {
	n, nc := node.StartForTest(b, mutate)
	c := client.New(nc)
	waitServing(b, c)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: benchRawStream, Subjects: []string{"rawbench.>"}, Storage: jetstream.FileStorage,
		Replicas: 1, Duplicates: 2 * time.Minute,
	}); err != nil {
		b.Fatal(err)
	}
	return n, c, js
}

// benchRawPublish publishes payload b.N times, serially, to the raw stream
// (benchRawSubject) and reports the latency and rate.
func benchRawPublish(b *testing.B, js jetstream.JetStream, payload []byte) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		if _, err := js.Publish(ctx, benchRawSubject, payload); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatency(b, lat, elapsed, "publishes/s")
}

// reportLatency reports the p50 and p99 of lat, and ops/elapsed as unit.
func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration, rateUnit string) float64 {
	b.Helper()
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	b.ReportMetric(float64(pct(0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(pct(0.99).Microseconds()), "p99-µs")
	rate := float64(len(lat)) / elapsed.Seconds()
	if rateUnit != "" {
		b.ReportMetric(rate, rateUnit)
	}
	return rate
}

// runWorkers runs work on benchWorkers goroutines, which each prepare and
// then wait for begin, so that they start together; it times them from
// begin, reports the process CPU per op, fails b on a worker's error and
// returns every latency and the elapsed time.
func runWorkers(b *testing.B, work func(w int, begin <-chan struct{}) ([]time.Duration, error)) ([]time.Duration, time.Duration) {
	b.Helper()
	lats := make([][]time.Duration, benchWorkers)
	errs := make([]error, benchWorkers)
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for w := range benchWorkers {
		wg.Go(func() { lats[w], errs[w] = work(w, begin) })
	}
	b.ResetTimer()
	cpu := cpustat.Start()
	start := time.Now()
	close(begin)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu.Report(b, b.N)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return slices.Concat(lats...), elapsed
}

// waitServing returns once the node answers requests on c. node.Start does
// not flush the service's subscriptions, so a request sent right after
// node.StartForTest may find no responders. A 404 from "get" for a session
// that does not exist means the endpoints registered before it (create,
// append, context) are in place too: one connection's SUBs are processed
// in order.
func waitServing(b testing.TB, c *client.Client) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Get(context.Background(), "bench-ready-probe")
		if client.Code(err) == 404 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the node does not serve: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// storedBatch appends one benchmark message to a fresh session and returns
// the EventBatch bytes the node stored for it, read back from the stream.
func storedBatch(b *testing.B, c *client.Client, js jetstream.JetStream) []byte {
	b.Helper()
	ctx := context.Background()
	id := newBenchSessions(b, c, 1)[0]
	if _, err := c.Append(ctx, id, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
		{Role: memoryv1.Role_ROLE_USER, Content: benchContent(0)},
	}}); err != nil {
		b.Fatal(err)
	}
	st, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, events.SessionSubject(id))
	if err != nil {
		b.Fatal(err)
	}
	return m.Data
}

// BenchmarkAppendRoundTrip measures client.Append end to end and, on the same
// server in the same run, the plain JetStream figures it is compared with.
// The raw figures run first so each append figure can report itself as a
// multiple of the raw rate (x-raw-64):
//
//   - raw-js-publish-1: jetstream.Publish of the exact bytes of the
//     EventBatch one benchmark append stores (batch-B), to rawbench.x
//     (stream RAWBENCH, file storage), serial, without the three headers an
//     append carries (expected stream, expected last subject sequence,
//     Nats-Msg-Id).
//   - raw-js-publish-64: the same from 64 goroutines over one shared
//     nats.Conn, the way the node publishes every actor's batch over its
//     single connection.
//   - 1client: one client, one ~200-byte user message per append, serial;
//     the default session, whose context assembler searches the session's
//     swap and scopes for every user message (nothing is recalled: the
//     budget keeps every message verbatim, so this is the search's cost).
//   - 1client-recall-off: the same with the assembler off.
//   - req-publish-reply-64: the messaging floor of an append without the
//     service: 64 workers request, a responder publishes to JetStream and
//     replies after the ack.
//   - 64sessions: 64 goroutines, each an agent worker with its own nats.Conn
//     and its own sessions; b.N appends split over them; x-floor-64 is its
//     rate over req-publish-reply-64's of the same run.
func BenchmarkAppendRoundTrip(b *testing.B) {
	n, c, js := benchNodeWithRaw(b, nil)
	ctx := context.Background()
	payload := storedBatch(b, c, js)

	workerNC := make([]*nats.Conn, benchWorkers)
	conns := make([]*client.Client, benchWorkers)
	for i := range conns {
		wc, err := nats.Connect(n.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(wc.Close)
		workerNC[i], conns[i] = wc, client.New(wc)
	}

	var rawRate64 float64   // of the last raw-js-publish-64 run
	var floorRate64 float64 // of the last req-publish-reply-64 run

	b.Run("raw-js-publish-1", func(b *testing.B) {
		benchRawPublish(b, js, payload)
		b.ReportMetric(float64(len(payload)), "batch-B")
	})

	b.Run("raw-js-publish-64", func(b *testing.B) {
		ops := splitOps(b.N, benchWorkers)
		lats := make([][]time.Duration, benchWorkers)
		errs := make([]error, benchWorkers)
		var wg sync.WaitGroup
		begin := make(chan struct{})
		for w := range benchWorkers {
			wg.Go(func() {
				lat := make([]time.Duration, 0, ops[w])
				<-begin
				for range ops[w] {
					t0 := time.Now()
					if _, err := js.Publish(ctx, benchRawSubject, payload); err != nil {
						errs[w] = err
						break
					}
					lat = append(lat, time.Since(t0))
				}
				lats[w] = lat
			})
		}
		b.ResetTimer()
		start := time.Now()
		close(begin)
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		rawRate64 = reportLatency(b, slices.Concat(lats...), elapsed, "publishes/s")
		b.ReportMetric(float64(len(payload)), "batch-B")
	})

	b.Run("1client", func(b *testing.B) { benchOneClient(b, c) })
	b.Run("1client-recall-off", func(b *testing.B) { benchOneClientWith(b, c, &memoryv1.AssemblyConfig{}) })

	// The floor of the append path's messaging without the service: a
	// request to a responder (on its own connection, as the node's), which
	// publishes the payload to JetStream and replies after the ack. Two
	// NATS round trips per op, no decoding, no actor, no model.
	b.Run("req-publish-reply-64", func(b *testing.B) {
		rc, err := nats.Connect(n.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		defer rc.Close()
		rjs, err := jetstream.New(rc)
		if err != nil {
			b.Fatal(err)
		}
		var handlers sync.WaitGroup
		sub, err := rc.Subscribe("floorbench.*", func(m *nats.Msg) {
			handlers.Go(func() {
				if _, err := rjs.Publish(ctx, benchRawSubject, m.Data); err != nil {
					_ = m.Respond([]byte(err.Error()))
					return
				}
				_ = m.Respond(nil)
			})
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			b.Fatal(err)
		}
		if err := rc.Flush(); err != nil { // the server knows the subscription
			b.Fatal(err)
		}
		defer handlers.Wait()
		defer func() { _ = sub.Unsubscribe() }()
		ops := splitOps(b.N, benchWorkers)
		lats, elapsed := runWorkers(b, func(w int, begin <-chan struct{}) ([]time.Duration, error) {
			wc := workerNC[w]
			subj := fmt.Sprintf("floorbench.%d", w)
			lat := make([]time.Duration, 0, ops[w])
			<-begin
			for range ops[w] {
				t0 := time.Now()
				rep, err := wc.Request(subj, payload, 10*time.Second)
				if err == nil && len(rep.Data) > 0 {
					err = errors.New(string(rep.Data))
				}
				if err != nil {
					return lat, err
				}
				lat = append(lat, time.Since(t0))
			}
			return lat, nil
		})
		floorRate64 = reportLatency(b, lats, elapsed, "ops/s")
		if rawRate64 > 0 {
			b.ReportMetric(floorRate64/rawRate64, "x-raw-64")
		}
	})

	b.Run("64sessions", func(b *testing.B) {
		ops := splitOps(b.N, benchWorkers)
		ids := make([][]string, benchWorkers)
		for w := range ids {
			ids[w] = newBenchSessions(b, conns[w], sessionsFor(ops[w]))
		}
		lats, elapsed := runWorkers(b, func(w int, begin <-chan struct{}) ([]time.Duration, error) {
			lat := make([]time.Duration, 0, ops[w])
			<-begin
			return benchAppends(conns[w], ids[w], ops[w], lat)
		})
		rate := reportLatency(b, lats, elapsed, "appends/s")
		if rawRate64 > 0 {
			b.ReportMetric(rate/rawRate64, "x-raw-64")
		}
		if floorRate64 > 0 {
			b.ReportMetric(rate/floorRate64, "x-floor-64")
		}
	})

}

// BenchmarkContext200Turns reads the LLM context of a 200-turn session over
// NATS (client.Context: request, actor, protobuf reply). Each turn is one
// append of a user question (~200 bytes) and an assistant answer (~400
// bytes); the budget is that of internal/segmented's BenchmarkContext200Turns
// (32,000 tokens, 2,000 reserved), too small for all 200 turns, so the
// session compressed L1 into summaries (and L2) along the way, as a long
// session does. The in-process model figure (state.Context(), no NATS) is
// internal/segmented BenchmarkContext200Turns.
func BenchmarkContext200Turns(b *testing.B) {
	_, nc := node.StartForTest(b, nil)
	c := client.New(nc)
	waitServing(b, c)
	ctx := context.Background()
	const id = "ctx200"
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{
		UserId: "u1", SystemPrompt: "You are a data assistant.", MaxContextTokens: 32000, ReservedOutputTokens: 2000,
	}); err != nil {
		b.Fatal(err)
	}
	var compressions uint32
	for i := range 200 {
		rep, err := c.AppendMessages(ctx, id,
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: benchContent(i)},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf(
				"Alice placed %d orders in region %d last quarter; Bob placed %d. %s", i*3, i%7, i*2,
				strings.Repeat(fmt.Sprintf("Week %d: %d orders, %d refunds. ", i%13, i%17, i%5), 9))})
		if err != nil {
			b.Fatal(err)
		}
		compressions += rep.GetCompressions()
	}
	first, err := c.Context(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("200 turns: %d compression steps; context: %d messages, %d/%d tokens (%.0f%%), %d of them recalled",
		compressions, len(first.GetMessages()), first.GetUsage().GetUsed(), first.GetUsage().GetBudget(), first.GetUsage().GetPercent(), first.GetLayers().GetRecalled())

	// full: the whole context every time (the client's path before it kept
	// contexts: request, reply, unmarshal). if_version: client.Context, which
	// holds the last context and asks with its version: "not modified".
	full := func() error {
		m, err := nc.Request("mem.v1.session."+id+".context", nil, 10*time.Second)
		if err != nil {
			return err
		}
		return proto.Unmarshal(m.Data, &memoryv1.ContextReply{})
	}
	cached := func() error {
		_, err := c.Context(ctx, id)
		return err
	}
	for _, tc := range []struct {
		name string
		get  func() error
	}{{"full", full}, {"if_version", cached}} {
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			start := time.Now()
			for b.Loop() {
				t0 := time.Now()
				if err := tc.get(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			reportLatency(b, lat, time.Since(start), "")
			b.ReportMetric(float64(len(first.GetMessages())), "ctx-msgs")
			b.ReportMetric(float64(proto.Size(first)), "reply-B")
		})
	}
}
