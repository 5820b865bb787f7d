package inspector_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var screenshots = flag.String("screenshots", "", "write screenshots of the main pages (PNG, 1280×800) into this directory (make screenshots)")

// TestScreenshots takes the README's screenshots of the main pages against a
// real node with a few sessions. It runs only with -screenshots DIR.
func TestScreenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("run with -screenshots DIR (make screenshots)")
	}
	u := startNode(t, nil)
	u.session(t, "support-7f3a", "alice", "helpdesk", 14)
	u.session(t, "onboarding-22", "bob", "helpdesk", 3)
	u.session(t, "billing-9c", "alice", "billing", 6)
	for i, who := range []string{"carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"} {
		u.session(t, fmt.Sprintf("ticket-%d", 4100+i*7), who, []string{"helpdesk", "billing", "returns"}[i%3], 1+i%5)
	}
	ctx := context.Background()
	if _, err := u.c.SetStatus(ctx, "onboarding-22", memoryv1.StatusAction_STATUS_ACTION_PAUSE, "waiting for the user"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"Prefers email over phone.", "Prefers email over phone.\nShips to Lyon, 12 rue Sainte.", "Prefers email.\nShips to Paris, 4 rue Oberkampf.\nVIP since 2025."} {
		if _, err := u.c.Put(ctx, client.User("alice"), &memoryv1.PutEntryRequest{Key: "profile", Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := u.c.Put(ctx, client.User("alice"), &memoryv1.PutEntryRequest{Key: "language", Value: []byte("French, answers in English are fine")}); err != nil {
		t.Fatal(err)
	}
	// Consolidation with review: a fact, then a correction waiting for it.
	if _, err := u.c.Configure(ctx, client.User("alice"), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{ConflictStrategy: "review"}}); err != nil {
		t.Fatal(err)
	}
	u.converse(t, "intro-31", "alice", "I live in Oslo.", "Noted, Oslo it is.")
	u.converse(t, "move-58", "alice", "Big news: I moved to Bergen last week.", "Congratulations on the move!")
	// An erasure or two for the ledger.
	u.session(t, "ticket-erased", "mallory", "helpdesk", 2)
	if _, err := u.c.EraseSession(ctx, "ticket-erased", "the user asked (GDPR art. 17)"); err != nil {
		t.Fatal(err)
	}
	if _, err := u.c.EraseEntry(ctx, client.User("alice"), "language", "stale preference"); err != nil {
		t.Fatal(err)
	}
	b := browser(t)
	if err := os.MkdirAll(*screenshots, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each view: its file, path, what shows once it is drawn, the theme,
	// and a script run before the picture (open a panel, scroll to it).
	for _, s := range []struct {
		name, path, wait string
		dark             bool
		js               string
	}{
		{"inspector-sessions.png", "/ui/", "#sessions", false, ""},
		{"inspector-context.png", "/ui/s/support-7f3a", "#ctx", false, ""},
		{"inspector-why.png", "/ui/s/support-7f3a", "#plan", false, `document.querySelectorAll('#ctx details').forEach(d => d.open = true); scrollTo(0, document.querySelector('#plan').getBoundingClientRect().top + scrollY - 56)`},
		{"inspector-conversation.png", "/ui/s/support-7f3a/conversation?n=9#m9", "#conversation", false, ""},
		{"inspector-timeline.png", "/ui/s/support-7f3a/timeline?seq=9", "#ctx", false, ""},
		{"inspector-timeline-dark.png", "/ui/s/support-7f3a/timeline", "#ctx", true, ""},
		{"inspector-compare.png", "/ui/s/support-7f3a/compare?a=9", "#changes", false, ""},
		{"inspector-search.png", "/ui/s/support-7f3a/search?q=refund+cracked+kettle", ".hit", false, ""},
		{"inspector-directory.png", "/ui/scopes", "#scopes", false, ""},
		{"inspector-scopes.png", "/ui/scopes?kind=user&id=alice&key=profile", ".version", false, ""},
		{"inspector-scope-admin.png", "/ui/scopes?kind=user&id=alice&key=fact/user/home_city", "#conflicts", false, openAll},
		{"inspector-erase-session.png", "/ui/s/billing-9c/erase", "#erasesession", false, `document.querySelector('#erase-reason').value = 'ticket 4471: the user asked to be forgotten'`},
		{"inspector-erasures.png", "/ui/erasures", "#erasures", false, ""},
	} {
		scheme := map[bool]string{false: "light", true: "dark"}[s.dark]
		if _, err := chromedp.Call(b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		do(t, b, 30*time.Second, chromedp.Navigate(u.base+s.path), chromedp.WaitVisible(chromedp.CSS(s.wait)), chromedp.Sleep(300*time.Millisecond))
		if s.js != "" {
			do(t, b, 10*time.Second, chromedp.Evaluate[chromedp.Void](s.js+";0"), chromedp.Sleep(200*time.Millisecond))
		}
		shot, err := chromedp.Run(b, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*screenshots, s.name), shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", s.name, len(shot))
	}
}
