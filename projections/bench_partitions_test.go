package projections

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/cpustat"
)

// benchLog is the log of benchStream: n session records (25 sessions, 1..3
// messages per append).
func benchLog(b *testing.B, n int) *logBuilder {
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
	return l
}

// benchPartitions is the number of log partitions of
// BenchmarkRebuildPartitions.
const benchPartitions = 4

// BenchmarkRebuildPartitions is BenchmarkRebuild with the log of
// benchStream in benchPartitions partition streams (RebuildPartitions);
// events/s counts the records of all partitions.
func BenchmarkRebuildPartitions(b *testing.B) {
	n := *benchRebuildEventsFlag
	js, _ := partitionedJS(b, benchPartitions)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, r := range benchLog(b, n).recs {
		data, err := events.EncodeBatch(r.Batch)
		if err != nil {
			b.Fatal(err)
		}
		part, err := events.SubjectPartition(r.Subject, benchPartitions)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishAsync(events.StoredSubject(r.Subject, part, benchPartitions), data); err != nil {
			b.Fatal(err)
		}
		if i%2048 == 2047 { // nats.go fails a publish that waits 200 ms behind 4,000 unacknowledged ones
			waitPublished(ctx, b, js)
		}
	}
	waitPublished(ctx, b, js)
	dir := b.TempDir()
	b.ResetTimer()
	start, cpu := time.Now(), cpustat.Start()
	for i := 0; i < b.N; i++ {
		stats, err := RebuildPartitions(context.Background(), js, events.StreamName, benchPartitions, filepath.Join(dir, "p.db"), testCodec, nil)
		if err != nil {
			b.Fatal(err)
		}
		if stats.Events != uint64(n) {
			b.Fatalf("rebuilt %d events", stats.Events)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "events/s")
	cpu.Report(b, n*b.N)
}

func waitPublished(ctx context.Context, b *testing.B, js jetstream.JetStream) {
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("publish timed out")
	}
}
