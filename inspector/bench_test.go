package inspector_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var (
	benchMessages = flag.Int("bench.messages", 1000, "messages in the benchmarked session (BenchmarkPageLoad)")
	benchSessions = flag.Int("bench.sessions", 10000, "sessions in the benchmarked list (BenchmarkPageLoad)")
)

// BenchmarkPageLoad measures the server time of a whole page (HTTP GET to
// the last byte, over loopback, no browser) against a real node: a session
// of -bench.messages messages (its context, its timeline's latest page,
// first page and a filtered page, time travel to its middle, the context
// panel the timeline fetches after it loads, at the middle and at the
// latest point, the conversation's latest and first pages) and the
// sessions list with -bench.sessions sessions. It reports
// p50 and p95 per page. make bench runs it with -benchtime=30x.
func BenchmarkPageLoad(b *testing.B) {
	u := startNode(b, nil)
	ctx := context.Background()
	if _, err := u.c.CreateSession(ctx, "big", &memoryv1.CreateSessionRequest{UserId: "u0", AgentId: "a0",
		SystemPrompt: "You are a helpful assistant."}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < *benchMessages; i += 2 {
		if _, err := u.c.AppendMessages(ctx, "big",
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("Question %d: what is the status of order A-%d and its refund?", i, i)},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("Order A-%d shipped on day %d; refund R-%d of %d.50 EUR is pending.", i, i%28+1, i, i%90)}); err != nil {
			b.Fatal(err)
		}
	}
	info, err := u.c.Get(ctx, "big")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if _, err := u.c.CreateSession(ctx, fmt.Sprintf("s%05d", i), &memoryv1.CreateSessionRequest{UserId: fmt.Sprintf("u%d", i%100), AgentId: fmt.Sprintf("a%d", i%10)}); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := 1; i < *benchSessions; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := u.n.WaitProjected(ctx, u.c.LastWriteSeq()); err != nil {
		b.Fatal(err)
	}
	b.Logf("session big: %d messages, %d compressions, seq %d; %d sessions", info.GetTotalMessages(), info.GetCompressions(), info.GetSeq(), *benchSessions)
	for _, p := range []struct{ name, path string }{
		{fmt.Sprintf("context/messages=%d", *benchMessages), "/ui/s/big"},
		{fmt.Sprintf("timeline/messages=%d", *benchMessages), "/ui/s/big/timeline"},
		{fmt.Sprintf("timeline-page1/messages=%d", *benchMessages), "/ui/s/big/timeline?page=1"},
		{fmt.Sprintf("timeline-filtered/messages=%d", *benchMessages), "/ui/s/big/timeline?kind=compress"},
		{fmt.Sprintf("timetravel/messages=%d", *benchMessages), fmt.Sprintf("/ui/s/big/timeline?seq=%d", info.GetSeq()/2)},
		{fmt.Sprintf("context-at-middle/messages=%d", *benchMessages), fmt.Sprintf("/ui/s/big/at?seq=%d", info.GetSeq()/2)},
		{fmt.Sprintf("context-at-latest/messages=%d", *benchMessages), "/ui/s/big/at"},
		{fmt.Sprintf("conversation/messages=%d", *benchMessages), "/ui/s/big/conversation"},
		{fmt.Sprintf("conversation-page1/messages=%d", *benchMessages), "/ui/s/big/conversation?page=1"},
		{fmt.Sprintf("list/sessions=%d", *benchSessions), "/ui/"},
		{fmt.Sprintf("list-filtered/sessions=%d", *benchSessions), "/ui/?user=u7"},
	} {
		b.Run(p.name, func(b *testing.B) {
			load := func() (time.Duration, int) {
				start := time.Now()
				res, err := http.Get(u.base + p.path)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Fatalf("GET %s: %d", p.path, res.StatusCode)
				}
				return time.Since(start), int(n)
			}
			first, size := load() // cold: actors activated, caches filled
			var took []time.Duration
			b.ResetTimer()
			for b.Loop() {
				d, _ := load()
				took = append(took, d)
			}
			slices.Sort(took)
			q := func(f float64) float64 { return float64(took[int(f*float64(len(took)-1))].Microseconds()) / 1000 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.95), "p95-ms")
			b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
			b.ReportMetric(float64(size)/1024, "KiB")
		})
	}
}

// BenchmarkLiveEvent measures how long after an append is acknowledged the
// inspector's live stream (Server-Sent Events from the API's watch) tells
// an open page; the page then redraws (TestBrowserLiveUpdate logs the
// whole way to the DOM).
func BenchmarkLiveEvent(b *testing.B) {
	u := startNode(b, nil)
	u.session(b, "s1", "u1", "a1", 1)
	info, err := u.c.Get(context.Background(), "s1")
	if err != nil {
		b.Fatal(err)
	}
	res, err := http.Get(fmt.Sprintf("%s/ui/s/s1/live?from=%d", u.base, info.GetSeq()))
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	lines := bufio.NewReader(res.Body)
	var took []time.Duration
	for b.Loop() {
		if _, err := u.c.AppendMessages(context.Background(), "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "noted"}); err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		for {
			l, err := lines.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.HasPrefix(l, "event: change") {
				break
			}
		}
		took = append(took, time.Since(acked))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[int(0.95*float64(len(took)-1))].Microseconds())/1000, "p95-ms")
}
