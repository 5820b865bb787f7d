package inspector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkTimelineBrowser loads the timeline of a session of
// -bench.messages messages in Chromium and reports, per load: the time to
// the page's DOMContentLoaded (the rows: server, transfer and parse), the
// time until the context panel (fetched after, a replay) is drawn, the
// page's DOM nodes and its size. make bench runs it.
func BenchmarkTimelineBrowser(b *testing.B) {
	br := browser(b)
	u := startNode(b, nil)
	ctx := context.Background()
	if _, err := u.c.CreateSession(ctx, "big", &memoryv1.CreateSessionRequest{UserId: "u0", AgentId: "a0", SystemPrompt: "You are a helpful assistant."}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < *benchMessages; i += 2 {
		if _, err := u.c.AppendMessages(ctx, "big",
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("Question %d: what is the status of order A-%d and its refund?", i, i)},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("Order A-%d shipped on day %d; refund R-%d of %d.50 EUR is pending.", i, i%28+1, i, i%90)}); err != nil {
			b.Fatal(err)
		}
	}
	var dcl, ctxMs, nodes, kib float64
	n := 0
	load := func() {
		do(b, br, 60*time.Second, chromedp.Navigate(u.base+"/ui/s/big/timeline"), chromedp.WaitReady(chromedp.CSS("#timeline")))
		c, cancel := context.WithTimeout(br, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(c, poll(`document.querySelector('#ctx') !== null`)); err != nil {
			b.Fatal(err)
		}
		nav := eval[map[string]float64](b, br, `(() => { const e = performance.getEntriesByType('navigation')[0];
			return {dcl: e.domContentLoadedEventEnd - e.startTime, size: e.transferSize}; })()`)
		// performance.now counts from the navigation's start; the poll
		// that saw the panel adds up to its interval.
		drawn := eval[float64](b, br, `performance.now()`)
		dcl += nav["dcl"]
		ctxMs += drawn
		nodes += float64(eval[int](b, br, `document.getElementsByTagName('*').length`))
		kib += nav["size"] / 1024
		n++
	}
	load() // cold
	dcl, ctxMs, nodes, kib, n = 0, 0, 0, 0, 0
	for b.Loop() {
		load()
	}
	b.ReportMetric(dcl/float64(n), "dcl-ms")
	b.ReportMetric(ctxMs/float64(n), "context-drawn-ms")
	b.ReportMetric(nodes/float64(n), "dom-nodes")
	b.ReportMetric(kib/float64(n), "KiB")
}
