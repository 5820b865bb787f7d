package inspector_test

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmem/agentmem/node"
)

const why = "the user asked (art. 17)"

// TestErasedSessionSaysSo: a session page of an erased session is still a
// 404, and says when, by whom, why and how many messages went, from the
// removal ledger; a session that never existed stays a plain 404. The
// erasures page lists the request and the removal of each aggregate. With
// the log in six partitions the ledger is the K streams' ledgers merged.
func TestErasedSessionSaysSo(t *testing.T) {
	t.Run("K1", func(t *testing.T) { erasedSessionSaysSo(t, nil) })
	t.Run("K6", func(t *testing.T) {
		erasedSessionSaysSo(t, func(c *node.Config) { c.LogPartitions, c.LogWindow = 6, 0 })
	})
}

func erasedSessionSaysSo(t *testing.T, mutate func(*node.Config)) {
	u := startNode(t, mutate)
	u.session(t, "gone", "u1", "a1", 3)
	u.session(t, "kept", "u1", "a1", 1)
	rc, err := u.c.EraseSession(context.Background(), "gone", why)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/ui/s/gone", "/ui/s/gone/timeline", "/ui/s/gone/search?q=kettle"} {
		code, body := get(t, u.base, p, nil, "", "")
		if code != 404 || !strings.Contains(body, `id="erased"`) || strings.Contains(body, "arrived damaged") {
			t.Errorf("GET %s: %d, want 404 saying the session was erased:\n%.600s", p, code, body)
			continue
		}
		for _, want := range []string{"Session gone was erased", `<q class="why">` + html.EscapeString(why) + "</q>", "<code>session:gone</code>", "completed"} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s lacks %q", p, want)
			}
		}
		m := regexp.MustCompile(`<b class="messages">(\d+)</b>`).FindStringSubmatch(body)
		if m == nil || m[1] == "0" {
			t.Errorf("GET %s: messages removed %v, want > 0", p, m)
		}
	}
	if code, body := get(t, u.base, "/ui/s/nobody", nil, "", ""); code != 404 || strings.Contains(body, `id="erased"`) {
		t.Errorf("a session that never existed: %d, says erased: %v", code, strings.Contains(body, `id="erased"`))
	}
	if code, body := get(t, u.base, "/ui/s/kept", nil, "", ""); code != 200 || strings.Contains(body, `id="erased"`) {
		t.Errorf("the kept session: %d", code)
	}
	code, body := get(t, u.base, "/ui/erasures", nil, "", "")
	if code != 200 {
		t.Fatalf("erasures: %d %s", code, body)
	}
	if partitioned := regexp.MustCompile(`· p\d+ seq \d+`).MatchString(body); partitioned != (mutate != nil) {
		t.Errorf("rows name their partition: %v, want %v", partitioned, mutate != nil)
	}
	rows := regexp.MustCompile(`<tr class="removal[^"]*" data-id="([^"]+)" data-target="session:gone"(?: data-of="([^"]+)")?>`).FindAllStringSubmatch(body, -1)
	if len(rows) < 2 { // the request and the removal of the session's events
		t.Errorf("erasures list %d rows for session:gone, want the request and its items:\n%s", len(rows), body)
	}
	ids := map[string]bool{}
	for _, r := range rows {
		ids[r[1]] = true
	}
	items := 0
	for _, r := range rows {
		if r[2] != "" {
			items++
			if !ids[r[2]] {
				t.Errorf("item %s names request %s, which is not listed", r[1], r[2])
			}
		}
	}
	if items == 0 || items == len(rows) {
		t.Errorf("%d of %d rows are items of a request, want the request and its items", items, len(rows))
	}
	if !ids[rc.GetRemovalId()] && rc.GetRemovalId() != "" {
		t.Errorf("the receipt's removal %s is not listed (%v)", rc.GetRemovalId(), ids)
	}
	if !strings.Contains(body, html.EscapeString(why)) || strings.Contains(body, "pending") {
		t.Errorf("erasures: want the why and every removal completed")
	}
	if code, _ := get(t, u.base, "/ui/erasures?reason=compact", nil, "", ""); code != 200 {
		t.Errorf("filter by reason: %d", code)
	}
	if code, body := get(t, u.base, "/ui/erasures?reason=forgot", nil, "", ""); code != 400 || !strings.Contains(body, "reason") {
		t.Errorf("bad reason: %d", code)
	}
	_, body = get(t, u.base, "/ui/erasures?reason=compact", nil, "", "")
	if strings.Contains(body, `data-target="session:gone"`) {
		t.Errorf("the compact filter lists the erase")
	}
}

// TestErasuresAdminOnly: with tenants the erasures page, like every page,
// is for the admin only.
func TestErasuresAdminOnly(t *testing.T) {
	u := startNode(t, tenantConfig)
	for _, c := range []struct {
		user, pass string
		want       int
	}{{"", "", 401}, {"front-u1", "u1-secret", 403}, {"agent-a1", "a1-secret", 403}, {"ops", "ops-secret", 200}} {
		if code, body := get(t, u.base, "/ui/erasures", nil, c.user, c.pass); code != c.want {
			t.Errorf("%q: %d, want %d: %.200s", c.user, code, c.want, body)
		}
	}
}

// TestBrowserErasures: in the browser, an erased session's page says it
// was erased and why, and its link leads to the erasures list, whose rows
// name the session's removals, completed.
func TestBrowserErasures(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "gone", "u1", "a1", 2)
	if _, err := u.c.EraseSession(context.Background(), "gone", why); err != nil {
		t.Fatal(err)
	}
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/gone/timeline"), chromedp.WaitVisible(chromedp.CSS("#erased")))
	if got := eval[string](t, b, `document.querySelector('#erased h1').textContent + ' / ' + document.querySelector('#erased q.why').textContent`); got != "Session gone was erased / "+why {
		t.Errorf("erased page says %q", got)
	}
	do(t, b, 20*time.Second, chromedp.Click(chromedp.CSS(`#erased a[href="/ui/erasures"]`)), chromedp.WaitVisible(chromedp.CSS("#erasures")),
		poll(`location.pathname === '/ui/erasures'`))
	type row struct {
		Target    string `json:"target"`
		Why       string `json:"why"`
		Completed string `json:"completed"`
	}
	rows := eval[[]row](t, b, `[...document.querySelectorAll('#erasures tr.removal')].map(r => ({target: r.dataset.target, why: r.cells[4].textContent, completed: r.querySelector('.completed').textContent}))`)
	n := 0
	for _, r := range rows {
		if r.Target == "session:gone" {
			n++
			if r.Why != why || r.Completed != "yes" {
				t.Errorf("row %+v, want why %q, completed", r, why)
			}
		}
	}
	if n < 2 {
		t.Errorf("rows %+v: want the request and the session's removal", rows)
	}
	if on := eval[string](t, b, `document.querySelector('nav.main a.on').textContent`); on != "Erasures" {
		t.Errorf("tab %q, want Erasures", on)
	}
}
