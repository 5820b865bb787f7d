package inspector_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// watchRows makes the page note, for every timeline row added to it, when
// it appeared (window.__rows[seq], milliseconds since the Unix epoch, the
// clock the benchmark reads too).
const watchRows = `window.__rows = {};
new MutationObserver(ms => { const at = performance.timeOrigin + performance.now();
  for (const m of ms) for (const n of m.addedNodes) {
    if (n.nodeType !== 1) continue;
    for (const r of [n, ...n.querySelectorAll('[data-seq]')]) if (r.matches('#timeline .ev[data-seq]') && !(r.dataset.seq in window.__rows)) window.__rows[r.dataset.seq] = at;
  } }).observe(document.body, {childList: true, subtree: true}); 0`

// openTimeline opens tab on session id's timeline, waits until it is
// live, and starts noting the rows added (watchRows).
func openTimeline(b *testing.B, tab context.Context, base, id string) {
	do(b, tab, 30*time.Second, chromedp.Navigate(base+"/ui/s/"+id+"/timeline"), chromedp.WaitVisible(chromedp.CSS("#livebadge.on")),
		poll(`document.querySelector('#ctx') !== null`), chromedp.Evaluate[chromedp.Void](watchRows))
}

// rowDelay waits until the row of seq is in tab and answers how long after
// acked (the append's reply) it appeared.
func rowDelay(b *testing.B, tab context.Context, seq uint64, acked time.Time) time.Duration {
	c, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	at, err := chromedp.Run(c, chromedp.Poll[float64](fmt.Sprintf(`window.__rows[%d] || 0`, seq)))
	if err != nil {
		b.Fatalf("the row of seq %d did not appear: %v", seq, err)
	}
	return time.UnixMicro(int64(at * 1000)).Sub(acked)
}

func reportQuantiles(b *testing.B, d []time.Duration, prefix string) {
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	b.ReportMetric(ms(d[len(d)/2]), prefix+"p50-ms")
	b.ReportMetric(ms(d[int(0.95*float64(len(d)-1))]), prefix+"p95-ms")
	b.ReportMetric(ms(d[len(d)-1]), prefix+"max-ms")
}

// BenchmarkLiveTimelineRow measures, in Chromium, how long after an
// append's reply its row appears on the session's open timeline page (the
// live stream, then the row fetched and inserted; no reload): the time the
// page's own clock notes the row's insertion minus the time the append
// answered.
func BenchmarkLiveTimelineRow(b *testing.B) {
	br := browser(b)
	u := startNode(b, nil)
	u.session(b, "s1", "u1", "a1", 2)
	openTimeline(b, br, u.base, "s1")
	var took []time.Duration
	for b.Loop() {
		rep, err := u.c.AppendMessages(context.Background(), "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "Where is my refund?"})
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, rowDelay(b, br, rep.GetResult().GetSeq(), time.Now()))
	}
	if eval[int](b, br, `Object.keys(window.__rows).length`) < len(took) {
		b.Fatal("the page reloaded (its row notes are gone)")
	}
	reportQuantiles(b, took, "row-")
}

// BenchmarkLiveTenTabs opens ten timeline tabs in one browser, each
// following its own session, while the agents keep max_watches (16)
// watches of those sessions in flight; each round appends to every
// session and reports how long after each append's reply its row showed
// in its tab, and how long after it the agents' watches answered, with how
// many of them were refused (429). tabs=0 is the same round without the
// browser: the agents' watches as they are with no inspector open.
func BenchmarkLiveTenTabs(b *testing.B) {
	for _, tabs := range []int{0, 10} {
		b.Run(fmt.Sprintf("tabs=%d", tabs), func(b *testing.B) { liveTabs(b, tabs) })
	}
}

func liveTabs(b *testing.B, tabs int) {
	const sessions, watches = 10, 16
	u := startNode(b, nil)
	var ts []context.Context
	var br context.Context
	if tabs > 0 {
		br = browser(b)
	}
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		u.session(b, id, "u1", "a1", 1)
		if i >= tabs {
			continue
		}
		tab, cancel := chromedp.NewContext(br)
		b.Cleanup(cancel)
		if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
			b.Fatal(err)
		}
		openTimeline(b, tab, u.base, id)
		ts = append(ts, tab)
	}
	var rows, agents []time.Duration
	refused := 0
	for b.Loop() {
		// The agents' watches, in flight before the appends.
		var wg sync.WaitGroup
		var mu sync.Mutex
		woke := make([]time.Time, watches)
		for w := range watches {
			id := fmt.Sprintf("s%d", w%sessions)
			info, err := u.c.Get(context.Background(), id)
			if err != nil {
				b.Fatal(err)
			}
			data, _ := proto.Marshal(&memoryv1.WatchRequest{FromSeq: info.GetSeq(), WaitMs: 10000})
			wg.Add(1)
			go func() {
				defer wg.Done()
				msg, err := u.nc.RequestMsgWithContext(context.Background(), &nats.Msg{Subject: "mem.v1.session." + id + ".watch", Data: data})
				mu.Lock()
				defer mu.Unlock()
				if err != nil || msg.Header.Get("Nats-Service-Error-Code") != "" {
					refused++
					return
				}
				woke[w] = time.Now()
			}()
		}
		time.Sleep(100 * time.Millisecond) // every watch is in its poll
		seqs := make([]uint64, sessions)
		acked := make([]time.Time, sessions)
		for i := range sessions {
			rep, err := u.c.AppendMessages(context.Background(), fmt.Sprintf("s%d", i), &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "Any news?"})
			if err != nil {
				b.Fatal(err)
			}
			seqs[i], acked[i] = rep.GetResult().GetSeq(), time.Now()
		}
		for i, tab := range ts {
			rows = append(rows, rowDelay(b, tab, seqs[i], acked[i]))
		}
		wg.Wait()
		for w, at := range woke {
			if !at.IsZero() {
				agents = append(agents, at.Sub(acked[w%sessions]))
			}
		}
	}
	if len(rows) > 0 {
		reportQuantiles(b, rows, "row-")
	}
	if len(agents) > 0 {
		reportQuantiles(b, agents, "agent-watch-")
	}
	b.ReportMetric(float64(refused), "agent-watches-refused")
}
