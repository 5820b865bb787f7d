package inspector_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestTimeTravelOutsideWindow: once the log's first messages are
// compacted away (--log-window), a point before the first kept one shows
// on the timeline the message `replay inspect --at-seq` exits with, not an
// error page; a scope version compacted away shows the API's reason on the
// key's page; points inside the window still show.
func TestTimeTravelOutsideWindow(t *testing.T) {
	// The node's clock stands still while the four versions are written,
	// then moves past the window: the first compaction finds all of them
	// older than it. (With a running clock, a compaction that came between
	// two slow puts kept the later versions in its baseline, and a scope of
	// one message is not compacted again.)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	u := startNode(t, func(c *node.Config) {
		c.DataDir, c.LogWindow = filepath.Join(t.TempDir(), "data"), 400*time.Millisecond
		c.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	ctx := context.Background()
	for i := 1; i <= 4; i++ { // the log's first messages: compacted away below
		if _, err := u.c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte(fmt.Sprintf("wombat value %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	u.session(t, "s1", "u1", "a1", 2) // a session is never compacted
	clock.Add(int64(2 * time.Second))
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err := u.c.History(ctx, client.Agent("a1"), "k")
		if err == nil && len(h) == 1 && h[0].GetVersion() == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent a1 not compacted: %d versions, %v", len(h), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// replay inspect refuses seq 1 with its message; the page shows the same.
	var out bytes.Buffer
	rerr := replay.Inspect(ctx, replay.InspectConfig{Conn: replay.Conn{NATSURL: u.n.ClientURL()}, SessionID: "s1", AtSeq: 1}, &out)
	if rerr == nil || !strings.Contains(rerr.Error(), "outside the time-travel window") {
		t.Fatalf("replay inspect --at-seq 1: %v", rerr)
	}
	want := strings.TrimPrefix(rerr.Error(), "replay: ")
	code, body := get(t, u.base, "/ui/s/s1/timeline?seq=1", nil, "", "")
	if code != 404 || !strings.Contains(body, `id="outside"`) || !strings.Contains(body, `id="timeline"`) {
		t.Fatalf("timeline at seq 1: %d (want 404 with the timeline and why)\n%s", code, body)
	}
	if !strings.Contains(body, html.EscapeString(want)) {
		t.Errorf("the page does not give replay inspect's message %q:\n%s", want, body[strings.Index(body, `id="outside"`):])
	}
	if strings.Contains(body, `id="ctx"`) {
		t.Errorf("the page shows a context for a point outside the window")
	}
	code, body = get(t, u.base, "/ui/s/s1/at.json?seq=1", nil, "", "")
	if code != 404 || !strings.Contains(body, want) {
		t.Errorf("at.json at seq 1: %d %s", code, body)
	}
	// Inside the window: the context, as before.
	_, body = get(t, u.base, "/ui/s/s1/timeline", nil, "", "")
	m := regexp.MustCompile(`data-seq="(\d+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no batch on the timeline:\n%s", body)
	}
	if code, body = get(t, u.base, "/ui/s/s1/at?seq="+m[1], nil, "", ""); code != 200 || !strings.Contains(body, `id="ctx"`) {
		t.Errorf("timeline at the session's first seq %s: %d", m[1], code)
	}
	// A version compacted away: the API's reason, on the key's page.
	code, body = get(t, u.base, "/ui/scopes?kind=agent&id=a1&key=k&version=2", nil, "", "")
	if code != 200 || !strings.Contains(body, `id="outside"`) || !strings.Contains(body, "outside the time-travel window") || !strings.Contains(body, "versions before v4") {
		t.Errorf("version 2 of k: %d\n%s", code, body)
	}
	if code, body = get(t, u.base, "/ui/scopes?kind=agent&id=a1&key=k&version=4", nil, "", ""); code != 200 || strings.Contains(body, `id="outside"`) || !strings.Contains(body, `class="version card current"`) {
		t.Errorf("version 4 of k: %d", code)
	}
}
