package inspector_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestBrowserTimelinePages: a session of more batches than a page shows
// its latest page (at most 200 rows, a bounded DOM), pages back, filters
// by kind with a legend that counts each kind, numbers rows by seq only,
// and appends a live batch as a row without reloading.
func TestBrowserTimelinePages(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 230)
	do(t, b, 30*time.Second, chromedp.Navigate(u.base+"/ui/s/s1/timeline"), chromedp.WaitVisible(chromedp.CSS("#timeline")),
		poll(`document.querySelector('#ctx') !== null`), chromedp.WaitVisible(chromedp.CSS("#livebadge.on")),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = 1`))
	total := eval[int](t, b, `document.querySelector('#travel').dataset.seqs.split(',').length`)
	rows := eval[int](t, b, `document.querySelectorAll('#timeline .ev').length`)
	nodes := eval[int](t, b, `document.getElementsByTagName('*').length`)
	t.Logf("%d batches, %d rows on the latest page, %d DOM nodes", total, rows, nodes)
	if total <= 200 || rows != 200 {
		t.Errorf("%d batches, %d rows on the last page", total, rows)
	}
	if nodes > 5000 {
		t.Errorf("%d DOM nodes, want at most 5,000", nodes)
	}
	if got := eval[string](t, b, `document.querySelector('#timeline .ev .seqlink').textContent`); !strings.HasPrefix(got, "seq ") {
		t.Errorf("row numbered %q, want seq N", got)
	}
	if strings.Contains(eval[string](t, b, `document.querySelector('#timeline').textContent`), "#") {
		t.Errorf("a row still shows a #number")
	}
	// Page back: the first page holds the session's first batches.
	do(t, b, 20*time.Second, chromedp.Click(chromedp.CSS(`nav.pager a[href^="?page=1"]`)), chromedp.WaitVisible(chromedp.CSS("#timeline")),
		poll(`location.search.includes('page=1')`))
	if want := total - 200*((total-1)/200); eval[int](t, b, `document.querySelectorAll('#timeline .ev').length`) != want {
		t.Errorf("first page: %d rows, want the %d the later pages leave", eval[int](t, b, `document.querySelectorAll('#timeline .ev').length`), want)
	}
	if got := eval[string](t, b, `document.querySelector('#timeline .ev').textContent`); !strings.Contains(got, "SessionCreated") {
		t.Errorf("first row %q, want the session's creation", got)
	}
	// The filter: only one kind (the first besides appends the session
	// has), counted in the legend.
	counts := eval[map[string]int](t, b, `Object.fromEntries([...document.querySelectorAll('#kinds a[data-kind]')].map(a => [a.dataset.kind, +a.querySelector('.count').textContent]))`)
	t.Logf("legend counts %v", counts)
	kind := ""
	for _, k := range []string{"summary", "compress", "status"} {
		if counts[k] > 0 {
			kind = k
			break
		}
	}
	do(t, b, 20*time.Second, chromedp.Click(chromedp.CSS(`#kinds a[data-kind=`+kind+`]`)), chromedp.WaitVisible(chromedp.CSS("#timeline")),
		poll(`location.search.includes('kind=`+kind+`')`))
	want := counts[kind]
	kinds := eval[[]string](t, b, `[...document.querySelectorAll('#timeline .ev')].map(li => li.className)`)
	if want == 0 || len(kinds) != min(want, 200) {
		t.Errorf("%s filter: %d rows, legend counts %d", kind, len(kinds), want)
	}
	for _, k := range kinds {
		if !strings.Contains(k, "has-"+kind) {
			t.Errorf("row %q under the %s filter", k, kind)
		}
	}
	if n := eval[int](t, b, `document.querySelectorAll('#kinds .kindf[title]').length`); n != 8 {
		t.Errorf("legend has %d kinds with their meaning, want 8", n)
	}
	// Live: back on the latest page, an append is a new row, no reload.
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s1/timeline"), chromedp.WaitVisible(chromedp.CSS("#livebadge.on")),
		poll(`document.querySelector('#ctx') !== null`), chromedp.Evaluate[chromedp.Void](`window.__noReload = 1`))
	before := eval[int](t, b, `document.querySelectorAll('#timeline .ev').length`)
	rep, err := u.c.AppendMessages(context.Background(), "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "Where is the live row?"})
	if err != nil {
		t.Fatal(err)
	}
	seq := rep.GetResult().GetSeq()
	do(t, b, 10*time.Second, poll(fmt.Sprintf(`!!document.querySelector('#timeline .ev[data-seq="%d"]')`, seq)),
		// The context shown is the latest: the append's, or the batch of
		// its sections stored after it.
		poll(fmt.Sprintf(`document.querySelector('#ctx') && +document.querySelector('#ctx').dataset.seq >= %d`, seq)))
	if eval[int](t, b, `window.__noReload || 0`) != 1 {
		t.Fatal("the page reloaded")
	}
	if got := eval[int](t, b, `document.querySelectorAll('#timeline .ev').length`); got <= before {
		t.Errorf("%d rows after the append, %d before", got, before)
	}
	if got := eval[string](t, b, fmt.Sprintf(`document.querySelector('#timeline .ev[data-seq="%d"]').textContent`, seq)); !strings.Contains(got, "Where is the live row?") {
		t.Errorf("the live row reads %q", got)
	}
}

// TestBrowserSliderKeyboard: arrow keys on the time-travel slider step
// without reloading the page or losing the focus, and the context follows
// once they pause, labelled with the point it shows.
func TestBrowserSliderKeyboard(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 8)
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s1/timeline"), poll(`document.querySelector('#ctx') !== null`),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = 1; window.__atFetches = 0;
			const f = window.fetch; window.fetch = (u, o) => { if (String(u).includes('/at?')) window.__atFetches++; return f(u, o); };`),
		chromedp.Focus(chromedp.CSS("#seq-slider")))
	seqs := eval[[]uint64](t, b, `document.querySelector('#travel').dataset.seqs.split(',').map(Number)`)
	for range 3 {
		do(t, b, 5*time.Second, chromedp.KeyEvent(kb.ArrowLeft))
	}
	want := seqs[len(seqs)-4]
	do(t, b, 10*time.Second, poll(fmt.Sprintf(`document.querySelector('#ctx') && +document.querySelector('#ctx').dataset.seq === %d`, want)))
	if eval[int](t, b, `window.__noReload || 0`) != 1 {
		t.Fatal("the page reloaded")
	}
	if got := eval[string](t, b, `document.activeElement && document.activeElement.id`); got != "seq-slider" {
		t.Errorf("focus on %q after the arrow keys, want the slider", got)
	}
	if n := eval[int](t, b, `window.__atFetches`); n != 1 {
		t.Errorf("%d context reads for 3 arrow keys, want 1 once they paused", n)
	}
	if got := eval[string](t, b, `document.querySelector('.athead').textContent`); !strings.Contains(got, fmt.Sprintf("seq %d", want)) {
		t.Errorf("heading %q, want seq %d", got, want)
	}
	if got := eval[string](t, b, `location.search`); got != fmt.Sprintf("?seq=%d", want) {
		t.Errorf("URL %q", got)
	}
}
