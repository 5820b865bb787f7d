package inspector_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestLiveTakesNoWatchSlot: twenty open live pages (more than the
// single-user caller's 16 max_watches) leave the agents every watch slot:
// sixteen API watch polls of the agent at once all answer, none 429, and
// every live page still sees the next change.
func TestLiveTakesNoWatchSlot(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 1)
	info, err := u.c.Get(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const pages = 20
	changed := make(chan int, pages)
	var open sync.WaitGroup
	var done sync.WaitGroup
	for i := range pages {
		open.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/ui/s/s1/live?from=%d", u.base, info.GetSeq()), nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				open.Done()
				t.Errorf("live %d: %v", i, err)
				return
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				open.Done()
				t.Errorf("live %d: %s", i, res.Status)
				return
			}
			open.Done()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if sc.Text() == "event: change" {
					changed <- i
					return
				}
			}
		}()
	}
	open.Wait()
	time.Sleep(300 * time.Millisecond) // every stream is in its poll
	// The agent's watches: as many at once as its max_watches allows.
	var polls sync.WaitGroup
	for i := range 16 {
		polls.Add(1)
		go func() {
			defer polls.Done()
			data, _ := proto.Marshal(&memoryv1.WatchRequest{FromSeq: info.GetSeq(), WaitMs: 300})
			msg, err := u.nc.RequestMsgWithContext(context.Background(), &nats.Msg{Subject: "mem.v1.session.s1.watch", Data: data})
			if err != nil {
				t.Errorf("agent watch %d: %v", i, err)
				return
			}
			if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
				t.Errorf("agent watch %d with %d live pages open: %s %s", i, pages, code, msg.Header.Get("Nats-Service-Error"))
			}
		}()
	}
	polls.Wait()
	u.appendTurns(t, "s1", 1, 1)
	deadline := time.After(10 * time.Second)
	for n := 0; n < pages; n++ {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d of %d live pages saw the append", n, pages)
		}
	}
	cancel()
	done.Wait()
}

// TestBrowserLiveSharedStream: eight live pages in one browser (more than
// its six connections to a host) all follow their session: the pages
// share one stream (a SharedWorker), and the eighth sees an append.
func TestBrowserLiveSharedStream(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	for i := range 8 {
		u.session(t, fmt.Sprintf("s%d", i), "u1", "a1", 1)
	}
	var tabs []context.Context
	for i := range 8 {
		tab, cancel := chromedp.NewContext(b)
		t.Cleanup(cancel)
		// Open the tab with no timeout: the first call's context is its lifetime.
		if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
			t.Fatal(err)
		}
		path := []string{"", "/timeline", "/conversation"}[(i+1)%3] // the last one: the conversation
		do(t, tab, 20*time.Second, chromedp.Navigate(fmt.Sprintf("%s/ui/s/s%d%s", u.base, i, path)), chromedp.WaitVisible(chromedp.CSS("#livebadge.on")))
		tabs = append(tabs, tab)
	}
	for i, tab := range tabs {
		if got := eval[string](t, tab, `document.querySelector('#livebadge').textContent`); got != "live" {
			t.Errorf("tab %d: %q", i, got)
		}
	}
	last := tabs[7]
	do(t, last, 5*time.Second, chromedp.Evaluate[chromedp.Void](`window.__seen = 0; document.addEventListener('inspector:updated', () => window.__seen++)`))
	u.appendTurns(t, "s7", 1, 1)
	do(t, last, 10*time.Second, poll(`window.__seen > 0 && document.querySelector('#conversation').textContent.includes('A-1001')`))
	streams := eval[int](t, tabs[0], `performance.getEntriesByType('resource').filter(e => e.name.includes('/ui/live')).length`)
	t.Logf("the first tab opened %d live streams itself (the worker holds the shared one)", streams)
	if streams != 0 {
		t.Errorf("the page opened %d live streams of its own, want 0 (the shared worker's)", streams)
	}
	if !strings.Contains(eval[string](t, tabs[0], `typeof SharedWorker`), "function") {
		t.Log("no SharedWorker in this browser")
	}
}

// TestBrowserLiveReconnecting: with the inspector's live budget taken (64
// sessions followed by other pages), a page says it is reconnecting and
// retries; once streams end it is live again and shows the next append.
func TestBrowserLiveReconnecting(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 1)
	info, err := u.c.Get(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var held sync.WaitGroup
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for range 64 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/ui/live?s=s1:%d", u.base, info.GetSeq()), nil)
		res, err := tr.RoundTrip(req)
		if err != nil || res.StatusCode != 200 {
			cancel()
			t.Fatalf("stream: %v %v", err, res)
		}
		held.Add(1)
		go func() { defer held.Done(); _, _ = io.Copy(io.Discard, res.Body); res.Body.Close() }()
	}
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s1"), chromedp.WaitVisible(chromedp.CSS("#livebadge.retry")))
	if got := eval[string](t, b, `document.querySelector('#livebadge').textContent`); got != "reconnecting…" {
		t.Errorf("badge %q, want reconnecting…", got)
	}
	cancel()
	held.Wait()
	do(t, b, 20*time.Second, chromedp.WaitVisible(chromedp.CSS("#livebadge.on")))
	rep, err := u.c.AppendMessages(context.Background(), "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "back live"})
	if err != nil {
		t.Fatal(err)
	}
	do(t, b, 10*time.Second, poll(fmt.Sprintf(`+document.querySelector('#ctx').dataset.seq >= %d`, rep.GetResult().GetSeq())))
}
