package inspector_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's Chromium (.ci/run installs it). Without it the
// browser tests fail when CI is set, and skip loudly otherwise.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("browser test: Chromium is not installed (apt-get install chromium; .ci/run does it) and CI=true: failing, not skipping")
	}
	t.Skip("\n\n*** browser test SKIPPED: Chromium is not installed (apt-get install chromium). CI fails here instead. ***\n")
	return ""
}

// browser starts a headless Chromium at 1280×800 and returns a tab context.
func browser(t testing.TB) context.Context {
	t.Helper()
	path := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1280, 800),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		acancel()
	})
	// Start the browser now, with no timeout: the context of the first
	// call is the browser's lifetime.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// do runs steps in the tab, bounded by d.
func do(t testing.TB, ctx context.Context, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the tab and returns its value.
func eval[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// poll waits until the JavaScript expression is true.
func poll(expr string) chromedp.Action[chromedp.Void] {
	a := chromedp.Poll[bool](expr)
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}
