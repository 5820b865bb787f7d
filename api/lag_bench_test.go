package api_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkProjectionLag measures, under a sustained append load from 16
// concurrent sessions, the time from an append's acknowledgement to the
// in-process projector having applied it (what a read-your-writes query
// waits for). Embedded default: file storage, no fsync.
func BenchmarkProjectionLag(b *testing.B) {
	n, nc := node.StartForTest(b, nil)
	c := client.New(nc)
	ctx := context.Background()
	const writers = 16
	for w := range writers {
		if _, err := c.CreateSession(ctx, fmt.Sprintf("lag%d", w), &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
			b.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		lags    []time.Duration
		wg      sync.WaitGroup
		waiters sync.WaitGroup
	)
	per := max(b.N/writers, 1)
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("lag%d", w)
			for i := range per {
				rep, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER,
					Content: fmt.Sprintf("message %d from writer %d: the build broke on step %d", i, w, i%7)})
				if err != nil {
					b.Error(err)
					return
				}
				// The writer goes on at once; a waiter measures this append's lag.
				acked, seq := time.Now(), rep.GetResult().GetSeq()
				waiters.Add(1)
				go func() {
					defer waiters.Done()
					if err := n.WaitProjected(ctx, seq); err != nil {
						b.Error(err)
						return
					}
					lag := time.Since(acked)
					mu.Lock()
					lags = append(lags, lag)
					mu.Unlock()
				}()
			}
		}()
	}
	wg.Wait()
	waiters.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lags) == 0 {
		return
	}
	slices.Sort(lags)
	b.ReportMetric(float64(len(lags))/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "lag-p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "lag-p99-ms")
	b.ReportMetric(float64(lags[len(lags)-1].Microseconds())/1000, "lag-max-ms")
}
