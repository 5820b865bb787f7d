package projections

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/cpustat"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var benchSearchDocs = flag.Int("bench.search.docs", 100_000, "messages indexed by BenchmarkSearch/BenchmarkRecall (1000000 for the 1M figure)")

// benchStream fills a stream with n session batches (25 sessions, 1..3
// messages per append) with async publishes, and returns the JetStream.
func benchStream(b *testing.B, n int) jetstream.JetStream {
	b.Helper()
	js, _ := testJS(b)
	l := newLogBuilder(b)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < n; i++ {
		sid := fmt.Sprintf("s%03d", i%25)
		if i < 25 {
			l.create(sid, fmt.Sprintf("u%d", i%5), "")
			continue
		}
		texts := make([]string, 1+rng.IntN(3))
		for j := range texts {
			texts[j] = benchText(rng)
		}
		l.appendMsgs(sid, texts...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, r := range l.recs {
		data, err := events.EncodeBatch(r.Batch)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishAsync(r.Subject, data); err != nil {
			b.Fatal(err)
		}
		if i%2048 == 2047 { // nats.go fails a publish that waits 200 ms behind 4,000 unacknowledged ones
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				b.Fatal("publish timed out")
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("publish timed out")
	}
	return js
}

var benchWords = []string{
	"deploy", "database", "timeout", "error", "customer", "invoice", "payment", "retry", "cluster", "node",
	"latency", "query", "index", "cache", "user", "session", "token", "budget", "summary", "agent",
	"memory", "search", "report", "churn", "revenue", "march", "april", "rollback", "migration", "schema",
}

func benchText(rng *rand.Rand) string {
	n := 6 + rng.IntN(14)
	out := make([]byte, 0, n*8)
	for i := 0; i < n; i++ {
		if i > 0 {
			out = append(out, ' ')
		}
		// Zipf-like: low indexes are frequent.
		w := benchWords[min(rng.IntN(len(benchWords)), rng.IntN(len(benchWords)))]
		out = append(out, w...)
		if rng.IntN(4) == 0 {
			out = fmt.Appendf(out, "%d", rng.IntN(5000))
		}
	}
	return string(out)
}

// benchRebuildEventsFlag is the length of the log of BenchmarkRebuild and
// the benchmarks beside it: 50k records fit in one transaction; a longer
// log (200000) shows the queue between the index stage and the writer.
var benchRebuildEventsFlag = flag.Int("bench.rebuild.events", 50_000, "log records of BenchmarkRebuild, RebuildNoWrite, RebuildNoBolt and RawOrderedRead")

// BenchmarkRebuild reports the events (log records) per second of Rebuild
// over a 50k-record stream (-bench.rebuild.events); compare with BenchmarkRawOrderedRead, the same
// stream read by a bare ordered consumer.
func BenchmarkRebuild(b *testing.B) {
	benchRebuildEvents := *benchRebuildEventsFlag
	js := benchStream(b, benchRebuildEvents)
	dir := b.TempDir()
	ctx := context.Background()
	b.ResetTimer()
	start, cpu := time.Now(), cpustat.Start()
	for i := 0; i < b.N; i++ {
		stats, err := Rebuild(ctx, js, events.StreamName, filepath.Join(dir, "p.db"), testCodec, nil)
		if err != nil {
			b.Fatal(err)
		}
		if stats.Events != uint64(benchRebuildEvents) {
			b.Fatalf("rebuilt %d events", stats.Events)
		}
	}
	b.ReportMetric(float64(benchRebuildEvents*b.N)/time.Since(start).Seconds(), "events/s")
	cpu.Report(b, benchRebuildEvents*b.N)
	b.StopTimer()
	b.ReportMetric(float64(countKeys(b, filepath.Join(dir, "p.db")))/float64(benchRebuildEvents), "keys/event")
}

// countKeys counts the keys of every bucket of the projection file at path.
func countKeys(b *testing.B, path string) int {
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	n := 0
	err = s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, bk *bolt.Bucket) error {
			n += bk.Stats().KeyN
			return nil
		})
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkBoltSortedPut is the storage engine's figure beside
// BenchmarkRebuild: bbolt Puts of 1M keys shaped like postings keys
// (user 0 term 0 block, 16-byte values) in ascending order, 200k per
// transaction, with Rebuild's options (no fsync per commit, pre-sized map,
// fill percent). Rebuild cannot write faster than this rate divided by the
// keys it writes per event (BenchmarkRebuild's keys/event).
func BenchmarkBoltSortedPut(b *testing.B) {
	const n, perTx = 1_000_000, 200_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = appendPostingKey(nil, string(termKey(fmt.Sprintf("u%d", i*5/n), fmt.Sprintf("term%07d", i))), uint64(i)>>postingBlockShift)
	}
	val := make([]byte, 16)
	b.ResetTimer()
	start, cpu := time.Now(), cpustat.Start()
	for it := 0; it < b.N; it++ {
		st, err := openStore(filepath.Join(b.TempDir(), "p.db"), true)
		if err != nil {
			b.Fatal(err)
		}
		for c := 0; c < n; c += perTx {
			err := st.db.Update(func(tx *bolt.Tx) error {
				bk := tx.Bucket(bucketBM25Postings)
				bk.FillPercent = rebuildFillPercent
				for _, k := range keys[c:min(n, c+perTx)] {
					if err := bk.Put(k, val); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "keys/s")
	cpu.Report(b, n*b.N) // per key
}

// BenchmarkRebuildNoWrite runs Rebuild's reading, decoding and message
// preparation (encoding, analysis) over the same stream and drops the
// result: the rate no layout of the projection file can exceed with this
// analysis on this machine.
func BenchmarkRebuildNoWrite(b *testing.B) {
	benchRebuildEvents := *benchRebuildEventsFlag
	js := benchStream(b, benchRebuildEvents)
	b.ResetTimer()
	start, cpu := time.Now(), cpustat.Start()
	for i := 0; i < b.N; i++ {
		ch, wait := readPrepared(context.Background(), []rebuildSource{{r: readerOf(b, js), stream: events.StreamName, last: uint64(benchRebuildEvents)}}, testCodec, DefaultIdleTimeout)
		n := 0
		for rb := range ch {
			<-rb.ready
			n += len(rb.recs)
		}
		if err := wait(); err != nil {
			b.Fatal(err)
		}
		if n != benchRebuildEvents {
			b.Fatalf("read %d events", n)
		}
	}
	b.ReportMetric(float64(benchRebuildEvents*b.N)/time.Since(start).Seconds(), "events/s")
	cpu.Report(b, benchRebuildEvents*b.N)
}

// BenchmarkRebuildNoBolt is BenchmarkRebuildNoWrite with Rebuild's index
// stage as well (the postings of each chunk grouped and sorted): all of
// Rebuild but the bbolt transactions.
func BenchmarkRebuildNoBolt(b *testing.B) {
	benchRebuildEvents := *benchRebuildEventsFlag
	js := benchStream(b, benchRebuildEvents)
	b.ResetTimer()
	start, cpu := time.Now(), cpustat.Start()
	for i := 0; i < b.N; i++ {
		ch, wait := readPrepared(context.Background(), []rebuildSource{{r: readerOf(b, js), stream: events.StreamName, last: uint64(benchRebuildEvents)}}, testCodec, DefaultIdleTimeout)
		n, pre := 0, 0
		q := indexChunks(context.Background(), ch, 1)
		for it, ok := q.next(); ok; it, ok = q.next() {
			n += len(it.recs)
			if it.pre != nil {
				pre++
			}
		}
		if err := wait(); err != nil {
			b.Fatal(err)
		}
		if n != benchRebuildEvents || pre == 0 {
			b.Fatalf("read %d events, %d chunks indexed ahead", n, pre)
		}
	}
	b.ReportMetric(float64(benchRebuildEvents*b.N)/time.Since(start).Seconds(), "events/s")
	cpu.Report(b, benchRebuildEvents*b.N)
}

// BenchmarkRawOrderedRead is the engine figure beside BenchmarkRebuild: an
// ordered consumer reading the same stream, doing nothing with the messages.
func BenchmarkRawOrderedRead(b *testing.B) {
	benchRebuildEvents := *benchRebuildEventsFlag
	js := benchStream(b, benchRebuildEvents)
	ctx := context.Background()
	b.ResetTimer()
	start, cpu := time.Now(), cpustat.Start()
	for i := 0; i < b.N; i++ {
		cons, err := js.OrderedConsumer(ctx, events.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"mem.ev.>"}})
		if err != nil {
			b.Fatal(err)
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(2 * rebuildBatch))
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < benchRebuildEvents; n++ {
			if _, err := it.Next(); err != nil {
				b.Fatal(err)
			}
		}
		it.Stop()
	}
	b.ReportMetric(float64(benchRebuildEvents*b.N)/time.Since(start).Seconds(), "msgs/s")
	cpu.Report(b, benchRebuildEvents*b.N)
}

// benchStore indexes n messages (10 users, 100 sessions) directly with
// ApplyBatch, in batches of 512 records.
func benchStore(b *testing.B, n int) *Store {
	b.Helper()
	s := openTestStore(b)
	rng := rand.New(rand.NewPCG(2, 2))
	l := newLogBuilder(b)
	for i := 0; i < 100; i++ {
		l.create(fmt.Sprintf("s%03d", i), fmt.Sprintf("u%d", i%10), "")
	}
	for done := 0; done < n; {
		sid := fmt.Sprintf("s%03d", rng.IntN(100))
		k := min(4, n-done)
		texts := make([]string, k)
		for j := range texts {
			texts[j] = benchText(rng)
		}
		l.appendMsgs(sid, texts...)
		done += k
		if len(l.recs) >= 512 {
			mustApply(b, s, l.recs)
			l.recs = l.recs[:0]
		}
	}
	mustApply(b, s, l.recs)
	return s
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
}

// BenchmarkSearch: one- to three-term queries, USER scope (a user holds a
// tenth of the corpus) and SESSION scope (a hundredth), at
// -bench.search.docs messages (default 100k).
func BenchmarkSearch(b *testing.B) {
	s := benchStore(b, *benchSearchDocs)
	rng := rand.New(rand.NewPCG(3, 3))
	for _, scope := range []memoryv1.SearchScope{memoryv1.SearchScope_SEARCH_SCOPE_USER, memoryv1.SearchScope_SEARCH_SCOPE_SESSION} {
		b.Run(scope.String(), func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := benchWords[rng.IntN(len(benchWords))]
				for j := rng.IntN(3); j > 0; j-- {
					q += " " + benchWords[rng.IntN(len(benchWords))]
				}
				t0 := time.Now()
				if _, err := s.Search(fmt.Sprintf("s%03d", rng.IntN(100)), scope, q, 10); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkSearchRanking: the queries of BenchmarkSearch in USER scope,
// ranked by plain BM25 (the ranking before schema 5) and by the default
// ranking (stop words, speaker and day clauses, proximity re-ranking of
// the best 50), alternately in one run so that both see the same machine.
func BenchmarkSearchRanking(b *testing.B) {
	s := benchStore(b, *benchSearchDocs)
	for _, v := range []struct {
		name string
		opts SearchOptions
	}{{"plain", SearchOptions{Plain: true}}, {"default", SearchOptions{}}} {
		b.Run(v.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 3))
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				q := benchWords[rng.IntN(len(benchWords))]
				for j := rng.IntN(3); j > 0; j-- {
					q += " " + benchWords[rng.IntN(len(benchWords))]
				}
				t0 := time.Now()
				if _, err := s.SearchWith(fmt.Sprintf("s%03d", rng.IntN(100)), memoryv1.SearchScope_SEARCH_SCOPE_USER, q, 10, v.opts); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkRecall: a page of 20 messages at a random offset.
func BenchmarkRecall(b *testing.B) {
	s := benchStore(b, *benchSearchDocs)
	rng := rand.New(rand.NewPCG(4, 4))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sid := fmt.Sprintf("s%03d", rng.IntN(100))
		t0 := time.Now()
		if _, _, err := s.Recall(sid, rng.IntN(900), 20); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}
