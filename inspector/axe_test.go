package inspector_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// axeScript is axe-core as `make deps` installs it (conformance/axe).
const axeScript = "../conformance/axe/node_modules/axe-core/axe.min.js"

// axeSource reads axe-core: without it the test fails when CI is set
// (make deps installs it there) and skips loudly otherwise.
func axeSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(axeScript)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("axe-core is not installed (%v): make deps installs it, and CI=true: failing, not skipping", err)
		}
		t.Skipf("\n\n*** accessibility test SKIPPED: axe-core is not installed (make deps): %v ***\n", err)
	}
	return string(b)
}

type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// openAll opens every collapsed section, so axe checks what it holds.
const openAll = `document.querySelectorAll('details').forEach(d => d.open = true)`

// runAxe injects axe-core into the page and returns its violations.
func runAxe(t *testing.T, b context.Context, src string) []axeViolation {
	t.Helper()
	c, cancel := context.WithTimeout(b, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Evaluate[chromedp.Void](src+"\n;0")); err != nil {
		t.Fatalf("inject axe-core: %v", err)
	}
	v, err := chromedp.Run(c, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ['violations'], rules: {'target-size': {enabled: true}}}).then(r => r.violations)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe.run: %v", err)
	}
	return v
}

// TestBrowserAccessibility: axe-core (with target-size on: it is off by
// default) finds no serious or critical
// violation on any page of the inspector, in the light theme and in the
// dark one (prefers-color-scheme: dark), with a session that compressed,
// called a tool, and a point of time travel out of range; the scopes
// directory and its search, a scope with a conflict and bookkeeping keys
// (opened), its admin forms (opened) and their results (a settle, an
// edit, an erasure receipt, the 403 of a forged CSRF token), a session's
// erase form and its receipt, and a 400.
func TestBrowserAccessibility(t *testing.T) {
	src := axeSource(t)
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 16)
	ctx := context.Background()
	if _, err := u.c.AppendMessages(ctx, "s1",
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "call-1", Name: "lookup_order", Arguments: `{"order":"A-1003"}`}}},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call-1", Name: "lookup_order", Content: `{"status":"refunded"}`}); err != nil {
		t.Fatal(err)
	}
	u.session(t, "gone", "u2", "a1", 1)
	if _, err := u.c.EraseSession(ctx, "gone", "user asked"); err != nil {
		t.Fatal(err)
	}
	if err := u.n.WaitProjected(ctx, u.c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	// A conflict to settle per theme (settling it ends it), in scopes
	// with consolidation's bookkeeping keys and source messages.
	for _, scheme := range []string{"light", "dark"} {
		if _, err := u.c.Configure(ctx, client.User("c"+scheme), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{ConflictStrategy: "review"}}); err != nil {
			t.Fatal(err)
		}
		u.converse(t, "c1"+scheme, "c"+scheme, "I live in Oslo.", "Cool.")
		u.converse(t, "c2"+scheme, "c"+scheme, "Big news: I moved to Bergen last week.", "Congrats!")
		u.session(t, "e"+scheme, "u3", "a1", 1) // erased from its page
	}
	const key = "fact/user/home_city"
	// Each page: its path ({u}: the theme's user), what shows once it is
	// drawn, and optionally a script to run then (open the collapsed
	// sections, submit a form) and what shows after it.
	pages := []struct{ path, ready, js, after string }{
		{path: "/ui/scopes", ready: "#scopes"},
		{path: "/ui/scopes?kind=user&q=Bergen", ready: "#dirhits"},
		{path: "/ui/scopes?kind=user&id=c{u}", ready: "#conflicts", js: openAll, after: "#internal[open]"},
		{path: "/ui/scopes?kind=user&id=c{u}&q=Bergen", ready: "#scopehits"},
		{path: "/ui/scopes?kind=user&id=c{u}&key=" + key, ready: "#admin", js: openAll, after: "#edit[open]"},
		{path: "/ui/scopes?kind=user&id=c{u}", ready: "#conflicts", js: `document.querySelector('#conflicts button[value=reject]').click()`, after: "#newversion"},
		{path: "/ui/scopes?kind=user&id=c{u}&key=" + key, ready: "#edit", js: `document.querySelector('#edit textarea').value='Trondheim'; document.querySelector('#edit form').submit()`, after: "#newversion"},
		{path: "/ui/scopes?kind=user&id=c{u}&key=" + key, ready: "#edit", js: `document.querySelector('#edit input[name=csrf]').value='forged'; document.querySelector('#edit form').submit()`, after: "#error"},
		{path: "/ui/scopes?kind=user&id=c{u}&key=" + key, ready: "#erase", js: `document.querySelector('#erase form').submit()`, after: "#receipt"},
		{path: "/ui/scopes?kind=nope", ready: "#error"},
		{path: "/ui/s/e{u}/erase", ready: "#erasesession"},
		{path: "/ui/s/e{u}/erase", ready: "#erasesession", js: `document.querySelector('#erase-reason').value='user asked'; document.querySelector('#erase-confirm').value='e' + (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'); document.querySelector('#erasesession form').submit()`, after: "#receipt"},
		{path: "/ui/s/c1{u}/conversation?n=1", ready: "#conversation"},
		{path: "/ui/", ready: "#sessions"},
		{path: "/ui/?user=U&sort=activity", ready: "#sessions"},
		{path: "/ui/s/s1", ready: "#ctx"},
		{path: "/ui/s/s1/conversation", ready: "#conversation"},
		{path: "/ui/s/s1/timeline", ready: "#ctx"},
		{path: "/ui/s/s1/timeline?kind=summary", ready: "#ctx"},
		{path: "/ui/s/s1/timeline?seq=99999", ready: "#outside"},
		{path: "/ui/s/s1/search?q=refund", ready: "#hitcount"},
		{path: "/ui/scopes?kind=session&id=s1", ready: "#entries"},
		{path: "/ui/erasures", ready: "#erasures"},
		{path: "/ui/no-such-page", ready: "#error"},
		{path: "/ui/s/nope/timeline", ready: "#error"},
		{path: "/ui/s/gone", ready: "#erased"},
		{path: "/ui/s/s1/compare", ready: "#changes"},
		{path: "/ui/s/s1/compare?a=99999999", ready: "#error"},
		{path: "/ui/s/s1?plan", ready: "#plan"},
	}
	failed := 0
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			p.path = strings.ReplaceAll(p.path, "{u}", scheme)
			do(t, b, 30*time.Second, chromedp.Navigate(u.base+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			if p.js != "" {
				c, cancel := context.WithTimeout(b, 30*time.Second)
				err := chromedp.Do(c, chromedp.Evaluate[chromedp.Void](p.js+";0"), chromedp.WaitVisible(chromedp.CSS(p.after)))
				cancel()
				if err != nil {
					t.Fatalf("%s (%s): %s, then %s: %v", p.path, scheme, p.js, p.after, err)
				}
				p.path += " then " + p.after
			}
			if scheme == "dark" && eval[string](t, b, `getComputedStyle(document.body).backgroundColor`) == "rgb(246, 247, 249)" {
				t.Errorf("%s: the dark theme is not applied", p.path)
			}
			for _, v := range runAxe(t, b, src) {
				var where []string
				for _, n := range v.Nodes[:min(3, len(v.Nodes))] {
					where = append(where, fmt.Sprintf("%v %s", n.Target, n.HTML[:min(120, len(n.HTML))]))
				}
				msg := fmt.Sprintf("%s (%s) %s %s: %s, %d nodes: %s", p.path, scheme, v.Impact, v.ID, v.Help, len(v.Nodes), strings.Join(where, " | "))
				if v.Impact == "serious" || v.Impact == "critical" {
					failed++
					t.Error(msg)
				} else {
					t.Log(msg)
				}
			}
		}
	}
	t.Logf("%d pages × 2 themes checked, %d serious or critical violations", len(pages), failed)
}
