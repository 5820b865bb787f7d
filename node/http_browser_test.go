package node_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmem/agentmem/node"
)

// crossOriginPage is a page of another origin that uses the API as a web
// app would: fetch with a string body (sent as text/plain, no preflight),
// fetch with an application/json body (preflighted), and an EventSource on
// the watch. What it reads is left on window.got for the test.
const crossOriginPage = `<!doctype html><meta charset="utf-8"><title>agentmem from another origin</title>
<script>
window.got = {events: [], errors: []};
const api = new URLSearchParams(location.search).get("api");
(async () => {
  try {
    const plain = await fetch(api + "/v1/session/b1/context", {method: "POST", body: JSON.stringify({format: "openai"})});
    window.got.plain = {status: plain.status, body: await plain.json()};
    const typed = await fetch(api + "/v1/session/b1/context", {method: "POST",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify({format: "anthropic"})});
    window.got.typed = {status: typed.status, body: await typed.json()};
    const bad = await fetch(api + "/v1/session/b1/append", {method: "POST",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify({messages: [{role: "wizard", content: "x"}]})});
    window.got.bad = {status: bad.status, body: await bad.json()};
  } catch (e) {
    window.got.errors.push(String(e));
  }
  const es = new EventSource(api + "/v1/session/b1/watch");
  es.addEventListener("open", () => { window.got.open = true; });
  es.addEventListener("change", (e) => { window.got.events.push({id: e.lastEventId, data: JSON.parse(e.data)}); });
})();
</script>`

// TestBrowserCrossOrigin: headless Chromium loads a page of an origin
// given with --http-origins; the page reads a session's context (OpenAI and
// Anthropic shapes), reads a JSON error, and follows the session's watch,
// seeing an append made after it opened.
func TestBrowserCrossOrigin(t *testing.T) {
	chrome := chromiumPath(t)
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, crossOriginPage)
	}))
	defer pages.Close()
	// The page is served as localhost, the API as 127.0.0.1: two origins.
	pageOrigin := strings.Replace(pages.URL, "127.0.0.1", "localhost", 1)
	_, _, base := httpNode(t, func(c *node.Config) { c.HTTPOrigins = []string{pageOrigin} })
	if code, out := post(t, base, "/v1/session/b1/create", `{"system_prompt":"You plan trips."}`); code != 200 {
		t.Fatalf("create: %d %v", code, out)
	}
	post(t, base, "/v1/session/b1/append", `{"messages":[{"role":"user","content":"a week in Porto"}]}`)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	b, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first call starts the browser and must not carry a timeout.
	if err := chromedp.Do(b, chromedp.EmulateViewport(1024, 768)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, stop := context.WithTimeout(b, 60*time.Second)
	defer stop()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageOrigin+"/?api="+base),
		until("window.got && (window.got.errors.length > 0 || (window.got.open === true && window.got.bad !== undefined))")); err != nil {
		t.Fatalf("page: %v", err)
	}
	type reply struct {
		Status int            `json:"status"`
		Body   map[string]any `json:"body"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Plain, Typed, Bad reply
		Errors            []string
	}]("window.got"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Errors) > 0 || got.Plain.Status != 200 || got.Typed.Status != 200 {
		t.Fatalf("page read %+v", got)
	}
	if s := fmt.Sprint(got.Plain.Body["rendered"]); !strings.Contains(s, "a week in Porto") || !strings.Contains(s, "You plan trips.") {
		t.Errorf("OpenAI context as the page read it: %s", s)
	}
	if s := fmt.Sprint(got.Typed.Body["rendered"]); !strings.Contains(s, "anthropic") || !strings.Contains(s, "a week in Porto") {
		t.Errorf("Anthropic context as the page read it: %s", s)
	}
	if got.Bad.Status != 400 || got.Bad.Body["field"] != "messages[0].role" {
		t.Errorf("error as the page read it: %+v", got.Bad)
	}
	// The watch replays the session's two changes, then follows a new one.
	post(t, base, "/v1/session/b1/append", `{"messages":[{"role":"user","content":"by train please"}]}`)
	if err := chromedp.Do(ctx, until(`window.got.events.some(e => JSON.stringify(e.data).includes("by train please"))`)); err != nil {
		t.Fatalf("the page did not see the append: %v", err)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int]("window.got.events.length"))
	if err != nil || n != 3 {
		t.Errorf("the page saw %d changes (%v), want 3", n, err)
	}
}

// until waits until the JavaScript expression is true.
func until(expr string) chromedp.Action[chromedp.Void] {
	a := chromedp.Poll[bool](expr)
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// chromiumPath finds Debian's Chromium (.ci/run installs it): without it
// the test fails in CI and skips elsewhere.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("Chromium is not installed (.ci/run installs it)")
	}
	t.Skip("Chromium is not installed (apt-get install chromium); CI fails instead of skipping")
	return ""
}
