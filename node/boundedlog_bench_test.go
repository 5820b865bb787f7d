package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// stepClock is a clock a benchmark moves by hand.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// BenchmarkBoundedLogYear runs synthetic days of traffic on a node whose
// clock is stepped a day at a time, with the defaults of the bounded log:
// --log-window 30 days, --archive-after 30 days, and --delete-after 30
// days. Each day: 5 agents overwrite 4 keys each 3 times (~300-byte
// values), one session is created, gets 6 messages and is terminated.
// After each day the retention sweep and the log compactor run once. It
// logs the stream's bytes and messages (and the removal ledger's share of
// them) and the projection file's size every 30 days, and reports them at
// the end and at the day the last bound is reached (90), so flat means
// end ≈ day-90 (the ledger aside: it grows with the number of removals). Days:
// AGENTMEM_BENCH_DAYS (default 120; 365 for the year).
func BenchmarkBoundedLogYear(b *testing.B) {
	days := 120
	if v := os.Getenv("AGENTMEM_BENCH_DAYS"); v != "" {
		var err error
		if days, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	const day = 24 * time.Hour
	for b.Loop() {
		clock := &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		data := filepath.Join(b.TempDir(), "data")
		n, nc := node.StartForTest(b, func(c *node.Config) {
			c.DataDir, c.Now = data, clock.Now
			c.LogWindow, c.ArchiveAfter, c.DeleteAfter = 30*day, 30*day, 30*day
		})
		c := client.New(nc)
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		log, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
		if err != nil {
			b.Fatal(err)
		}
		// ledgerBytes is the size of the removal ledger's batches (never
		// removed: it grows with the number of removals, not their content).
		ledgerBytes := func() (n uint64, msgs uint64) {
			bd, err := log.Bounds(ctx)
			if err != nil {
				b.Fatal(err)
			}
			cur, err := log.Read(ctx, 1, events.WithSubjects(events.RemovalSubjects), events.WithStop(bd.Last))
			if err != nil {
				b.Fatal(err)
			}
			defer cur.Close()
			for {
				r, err := cur.Next(ctx)
				if err != nil {
					return n, msgs
				}
				n += uint64(len(r.Data) + len(r.Subject))
				msgs++
			}
		}
		measure := func() (uint64, uint64, int64) {
			s, err := js.Stream(ctx, events.StreamName)
			if err != nil {
				b.Fatal(err)
			}
			st := s.CachedInfo().State
			fi, err := os.Stat(filepath.Join(data, "projection.db"))
			if err != nil {
				b.Fatal(err)
			}
			return st.Bytes, st.Msgs, fi.Size()
		}
		var at90 [3]float64
		value := make([]byte, 300)
		began := time.Now()
		for d := 1; d <= days; d++ {
			for a := range 5 {
				for k := range 12 {
					copy(value, fmt.Sprintf("agent %d key %d day %d put %d ", a, k%4, d, k))
					if _, err := c.Put(ctx, client.Agent(fmt.Sprintf("a%d", a)), &memoryv1.PutEntryRequest{Key: fmt.Sprintf("k%d", k%4), Value: value}); err != nil {
						b.Fatal(err)
					}
				}
			}
			id := fmt.Sprintf("s%d", d)
			if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
				b.Fatal(err)
			}
			for m := range 6 {
				if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("day %d message %d about the quarterly report and its numbers", d, m)}); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := c.SetStatus(ctx, id, memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
				b.Fatal(err)
			}
			clock.Add(day)
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			if err := n.WaitProjected(wctx, c.LastWriteSeq()); err != nil {
				b.Fatal(err)
			}
			if err := n.RetentionForTest(wctx); err != nil {
				b.Fatal(err)
			}
			if _, _, err := n.CompactForTest(wctx); err != nil {
				b.Fatal(err)
			}
			cancel()
			if d%30 == 0 || d == days {
				sb, sm, pb := measure()
				lb, lm := ledgerBytes()
				b.Logf("day %3d: stream %8d bytes %6d messages (ledger %7d bytes in %5d), projection %8d bytes (%s)", d, sb, sm, lb, lm, pb, time.Since(began).Round(time.Second))
				if d == 90 {
					at90 = [3]float64{float64(sb), float64(sm), float64(pb)}
				}
			}
		}
		sb, sm, pb := measure()
		lb, _ := ledgerBytes()
		b.ReportMetric(float64(lb), "ledger-bytes-end")
		b.ReportMetric(float64(days), "days")
		b.ReportMetric(float64(sb), "stream-bytes-end")
		b.ReportMetric(float64(sm), "stream-msgs-end")
		b.ReportMetric(float64(pb), "projection-bytes-end")
		if at90[0] > 0 {
			b.ReportMetric(at90[0], "stream-bytes-day90")
			b.ReportMetric(at90[2], "projection-bytes-day90")
		}
	}
}
