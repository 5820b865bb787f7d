package inspector_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestErrorsArePages: every refusal and failure is an HTML page with the
// navigation and what went wrong, and a point of time travel out of the
// session's range says so (404), never shown as another point.
func TestErrorsArePages(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "first", "u1", "a1", 1) // s1's first batch is not the log's first
	u.session(t, "s1", "u1", "a1", 3)
	info, err := u.c.Get(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	page := func(code int, body string) bool {
		return strings.Contains(body, "<!doctype html>") && strings.Contains(body, `<nav class="main"`) && strings.Contains(body, `href="/ui/"`)
	}
	for _, c := range []struct {
		path string
		hdr  map[string]string
		code int
		says string
	}{
		{"/ui/no-such-page", nil, 404, "No inspector page at /ui/no-such-page"},
		{"/ui/s/s1/nothing", nil, 404, "No inspector page"},
		{"/ui/s/nope", nil, 404, "does not exist"},
		{"/ui/s/nope/conversation", nil, 404, "does not exist"},
		{"/ui/s/s1/timeline?seq=abc", nil, 400, "not a stream sequence"},
		{"/ui/s/s1/timeline?kind=nope", nil, 400, "kind"},
		{"/ui/s/s1/conversation?page=99", nil, 400, "want 1..1"},
		{"/ui/s/s1/message/999", nil, 404, "no message 999"},
		{"/ui/?password=x", nil, 400, "credentials never go in a URL"},
		{"/ui/?sort=nope", nil, 400, "sort"},
		{"/ui/", map[string]string{"Host": "evil.example"}, 403, "Forbidden"},
		{"/ui/s/s1/timeline?seq=99999", nil, 404, "seq 99999 is after this session&#39;s latest batch"},
		{"/ui/s/s1/timeline?seq=1", nil, 404, "seq 1 is before this session began"},
	} {
		code, body := get(t, u.base, c.path, c.hdr, "", "")
		if code != c.code || !page(code, body) || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d, want %d, an HTML page with the navigation saying %q:\n%s", c.path, code, c.code, c.says, body[:min(len(body), 3000)])
		}
	}
	// Out of range: the page never calls it the context at that seq.
	_, body := get(t, u.base, "/ui/s/s1/timeline?seq=99999", nil, "", "")
	if strings.Contains(body, "Context at seq 99999") || strings.Contains(body, `id="ctx"`) {
		t.Errorf("seq 99999 shown as a context")
	}
	if !strings.Contains(body, "?seq="+strconv.FormatUint(info.GetSeq(), 10)) {
		t.Errorf("no link to the latest point, seq %d", info.GetSeq())
	}
	code, part := get(t, u.base, "/ui/s/s1/at?seq="+strconv.FormatUint(info.GetSeq()+1000, 10), nil, "", "")
	if code != 404 || !strings.Contains(part, `id="outside"`) {
		t.Errorf("at after the end: %d %s", code, part)
	}
	// POST: read-only, as a page.
	res, err := http.Post(u.base+"/ui/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 405 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("POST: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// TestSessionsFilters: user and agent filters together, ignoring case, by
// prefix; sorted by last activity on demand.
func TestSessionsFilters(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "s-a", "Alice", "support-bot", 1)
	u.session(t, "s-b", "alice2", "sales-bot", 1)
	u.session(t, "s-c", "bob", "support-bot", 1)
	u.appendTurns(t, "s-a", 1, 1) // s-a: the latest activity
	if err := u.n.WaitProjected(context.Background(), u.c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	rows := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<tr data-session="([^"]+)"`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"?user=ALI", []string{"s-a", "s-b"}},
		{"?agent=Support", []string{"s-a", "s-c"}},
		{"?user=ali&agent=support", []string{"s-a"}},
		{"?user=ali&agent=sales&status=active", []string{"s-b"}},
		{"?sort=activity", []string{"s-a", "s-c", "s-b"}},
		{"?user=a&sort=activity", []string{"s-a", "s-b"}},
		{"", []string{"s-a", "s-b", "s-c"}},
	} {
		code, body := get(t, u.base, "/ui/"+c.query, nil, "", "")
		if got := rows(body); code != 200 || !slices.Equal(got, c.want) {
			t.Errorf("%s: %d %v, want %v", c.query, code, got, c.want)
		}
	}
}

// TestBrowserOutOfRangeSeq: a seq typed before the session's start says
// so on the page (no silent failure), and the slider still works after.
func TestBrowserOutOfRangeSeq(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "first", "u1", "a1", 1)
	u.session(t, "s1", "u1", "a1", 2)
	if _, err := u.c.AppendMessages(context.Background(), "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "x"}); err != nil {
		t.Fatal(err)
	}
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s1/timeline"), poll(`document.querySelector('#ctx') !== null`),
		chromedp.SetValue(chromedp.CSS("#seq-input"), "1"), chromedp.Submit(chromedp.CSS("#travel")),
		chromedp.WaitVisible(chromedp.CSS("#outside")))
	if got := eval[string](t, b, `document.querySelector('#outside').textContent`); !strings.Contains(got, "before this session began") {
		t.Errorf("outside says %q", got)
	}
	if got := eval[string](t, b, `document.querySelector('.athead').textContent`); strings.Contains(got, "Context at seq 1") {
		t.Errorf("heading %q", got)
	}
}
