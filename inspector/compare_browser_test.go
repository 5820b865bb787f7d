package inspector_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserCompare: from a point of time travel the panel (fetched after
// the timeline loads) links to the comparison of that point with the
// latest; the comparison lists changes; its form compares two other
// points by URL.
func TestBrowserCompare(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 2)
	early := u.c.LastWriteSeq()
	u.appendTurns(t, "s1", 2, 12)
	// The latest batch: the last append's, or its sections' stored after it.
	cx, err := u.c.Context(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	last := max(u.c.LastWriteSeq(), cx.GetSeq())
	do(t, b, 30*time.Second, chromedp.Navigate(fmt.Sprintf("%s/ui/s/s1/timeline?seq=%d", u.base, early)),
		chromedp.WaitVisible(chromedp.CSS("#ctx")), chromedp.Click(chromedp.CSS("a.cmplink")), chromedp.WaitVisible(chromedp.CSS("#changes")))
	url := eval[string](t, b, `location.pathname + location.search`)
	if want := fmt.Sprintf("/ui/s/s1/compare?a=%d&b=%d", early, last); url != want {
		t.Errorf("the panel's link went to %s, want %s", url, want)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#changes li.change').length`); n == 0 {
		t.Error("the comparison lists no change")
	}
	mid := early + (last-early)/2
	do(t, b, 30*time.Second, chromedp.SetValue(chromedp.CSS("#cmpa"), fmt.Sprint(mid)), chromedp.Submit(chromedp.CSS("form.cmpform")),
		chromedp.WaitVisible(chromedp.CSS("#changes")))
	url = eval[string](t, b, `location.pathname + location.search`)
	if !strings.Contains(url, fmt.Sprintf("a=%d", mid)) || !strings.Contains(url, fmt.Sprintf("b=%d", last)) {
		t.Errorf("the form went to %s, want a=%d and b=%d", url, mid, last)
	}
	shownA := eval[string](t, b, `document.getElementById('compare').dataset.a`)
	if shownA == "" || shownA == fmt.Sprint(early) {
		t.Errorf("A shown after the form: %q", shownA)
	}
}
