package inspector_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// pageItem is one context item as the page shows it.
type pageItem struct {
	Layer   string `json:"layer"`
	ID      string `json:"id"`
	Tokens  uint32 `json:"tokens"`
	Content string `json:"content"`
}

type pageSection struct {
	Layer    string `json:"layer"`
	Tokens   uint32 `json:"tokens"`
	Reported uint32 `json:"reported"`
	Sum      uint32 `json:"sum"`
}

type pageContext struct {
	Seq      uint64        `json:"seq"`
	Used     uint32        `json:"used"`
	Total    uint32        `json:"total"`
	Items    []pageItem    `json:"items"`
	Sections []pageSection `json:"sections"`
}

// readContext reads the context the page shows from its DOM: each
// section's shown total and the sum of its items' tokens, and every item.
const readContextJS = `(() => {
  const ctx = document.querySelector('#ctx');
  const out = {seq: +ctx.dataset.seq, used: +ctx.dataset.used, total: +ctx.dataset.total, items: [], sections: []};
  ctx.querySelectorAll('section.layer').forEach(s => {
    let sum = 0;
    s.querySelectorAll('.item').forEach(it => {
      sum += +it.dataset.tokens;
      out.items.push({layer: s.dataset.layer, id: it.dataset.id, tokens: +it.dataset.tokens, content: it.querySelector('pre.content').textContent});
    });
    out.sections.push({layer: s.dataset.layer, tokens: +s.dataset.tokens, reported: +s.dataset.reported, sum: sum});
  });
  return out;
})()`

func readContext(t *testing.T, b context.Context) pageContext {
	t.Helper()
	return eval[pageContext](t, b, readContextJS)
}

// TestBrowserSessionsList: the list shows every session, and the filters
// by user, agent and status narrow it as the API does.
func TestBrowserSessionsList(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s-a", "u1", "a1", 2)
	u.session(t, "s-b", "u2", "a2", 1)
	u.session(t, "s-c", "u1", "a2", 3)
	if _, err := u.c.SetStatus(context.Background(), "s-c", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
		t.Fatal(err)
	}
	if err := u.n.WaitProjected(context.Background(), u.c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	rows := func() []string {
		return eval[[]string](t, b, `[...document.querySelectorAll('#sessions tr[data-session]')].map(r => r.dataset.session)`)
	}
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#sessions")))
	if got := rows(); !slices.Equal(got, []string{"s-a", "s-b", "s-c"}) {
		t.Fatalf("list: %v, want s-a s-b s-c", got)
	}
	if got := eval[int](t, b, `+document.querySelector('#counts').dataset.messages`); got != 12 {
		t.Errorf("message count %d, want 12", got)
	}
	if got := eval[int](t, b, `document.querySelectorAll('#sessions .bar.small').length`); got != 3 {
		t.Errorf("%d budget bars, want 3", got)
	}
	// Filter by user with the form, as a person would.
	do(t, b, 20*time.Second, chromedp.SetValue(chromedp.CSS(`input[name=user]`), "u1"),
		chromedp.Submit(chromedp.CSS(`form.filters`)), chromedp.WaitVisible(chromedp.CSS(`#sessions`)),
		poll(`location.search.includes('user=u1')`))
	do(t, b, 10*time.Second, chromedp.WaitVisible(chromedp.CSS(`#sessions`)))
	if got := rows(); !slices.Equal(got, []string{"s-a", "s-c"}) {
		t.Fatalf("user u1: %v, want s-a s-c", got)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"?agent=a2", []string{"s-b", "s-c"}},
		{"?status=terminated", []string{"s-c"}},
		{"?user=u1&status=active", []string{"s-a"}},
	} {
		do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/"+c.query), chromedp.WaitVisible(chromedp.CSS("#sessions")))
		if got := rows(); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
	}
}

// TestBrowserContextLayers: a session's page shows every item of the
// context the API answers, in order, and each section's tokens (the sum of
// its items) equal the layer counts of the API's context reply.
func TestBrowserContextLayers(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 16) // enough turns to compress into L2
	cx, err := u.c.Context(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s1"), chromedp.WaitVisible(chromedp.CSS("#ctx")))
	got := readContext(t, b)
	if got.Seq != cx.GetSeq() || got.Used != cx.GetUsage().GetUsed() {
		t.Errorf("page at seq %d used %d; API context at seq %d used %d", got.Seq, got.Used, cx.GetSeq(), cx.GetUsage().GetUsed())
	}
	l := cx.GetLayers()
	want := map[string]uint32{"rom": l.GetRom(), "kernel": l.GetKernel(), "memory": l.GetMemory(), "l2": l.GetL2(),
		"recalled": l.GetRecalled(), "promoted": l.GetPromoted(), "l1": l.GetL1()}
	var total, apiTotal uint32
	for _, s := range got.Sections {
		if s.Sum != s.Tokens || s.Tokens != want[s.Layer] || s.Reported != want[s.Layer] {
			t.Errorf("section %s: items sum %d, shown %d, reported %d; the API's context reply says %d", s.Layer, s.Sum, s.Tokens, s.Reported, want[s.Layer])
		}
		total += s.Sum
	}
	for _, v := range want {
		apiTotal += v
	}
	if total != apiTotal || got.Total != apiTotal {
		t.Errorf("page total %d (shown %d), API layers total %d", total, got.Total, apiTotal)
	}
	// The session holds more than ROM and L1: L2 summaries, or recalled
	// turns (which the node chooses depends on what the projection had
	// applied when each question was assembled).
	if want["rom"] == 0 || want["l1"] == 0 || want["l2"]+want["recalled"] == 0 {
		t.Errorf("want ROM, L1 and L2 or recalled items: %v", want)
	}
	if len(got.Items) != len(cx.GetMessages()) {
		t.Fatalf("page shows %d items, the API context has %d messages", len(got.Items), len(cx.GetMessages()))
	}
	for i, m := range cx.GetMessages() {
		it := got.Items[i]
		if it.ID != m.GetId() || it.Layer != m.GetLayer() || it.Tokens != m.GetTokens() || it.Content != m.GetContent() {
			t.Errorf("item %d: page %s/%s %d tokens, API %s/%s %d tokens", i+1, it.Layer, it.ID, it.Tokens, m.GetLayer(), m.GetId(), m.GetTokens())
		}
	}
	// The renderings are the API's: the OpenAI messages parse and have one
	// system message first.
	openai := eval[string](t, b, `document.querySelector('[data-pane=openai]').textContent`)
	var r struct {
		OpenAI []struct {
			Role string `json:"role"`
		} `json:"openai"`
	}
	if err := json.Unmarshal([]byte(openai), &r); err != nil || len(r.OpenAI) == 0 || r.OpenAI[0].Role != "system" {
		t.Errorf("OpenAI rendering: %v %q", err, openai[:min(200, len(openai))])
	}
}

// TestBrowserTimeTravel: moving the slider shows the context at that
// sequence, and it is exactly what `replay inspect --at-seq` returns.
func TestBrowserTimeTravel(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	// Entries the assembler may choose for the memory section (its texts
	// are references in the log, read back by actors.ContextAt).
	for k, v := range map[string]string{"refunds": "Refunds to a Visa card take 3 to 5 days; damaged kettles are refunded in full.",
		"card": "The user's card on file is a Visa ending 4242."} {
		if _, err := u.c.Put(context.Background(), client.User("u1"), &memoryv1.PutEntryRequest{Key: k, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	u.session(t, "s1", "u1", "a1", 16)
	u.session(t, "other", "u2", "a2", 2) // batches of another session between
	u.appendTurns(t, "s1", 16, 2)
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s1/timeline"), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	seqs := eval[[]uint64](t, b, `document.querySelector('#travel').dataset.seqs.split(',').map(Number)`)
	if len(seqs) < 10 {
		t.Fatalf("timeline has %d batches", len(seqs))
	}
	checked, memory := 0, 0
	for _, idx := range []int{0, len(seqs) / 3, len(seqs) / 2, len(seqs) - 3, len(seqs) - 1} {
		at := seqs[idx]
		// Move the slider as a person would (input, then change): the page
		// swaps the view in place.
		do(t, b, 20*time.Second,
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.querySelector('#seq-slider'); s.value = %d;
				s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); })()`, idx)),
			poll(fmt.Sprintf(`document.querySelector('#ctx') && +document.querySelector('#ctx').dataset.seq === %d && location.search.includes('seq=%d')`, at, at)))
		got := readContext(t, b)
		var out bytes.Buffer
		if err := replay.Inspect(context.Background(), replay.InspectConfig{Conn: replay.Conn{NATSURL: u.n.ClientURL()}, SessionID: "s1", AtSeq: at, JSON: true}, &out); err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Context json.RawMessage `json:"context"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		cx := &memoryv1.ContextReply{}
		if err := protojson.Unmarshal(rep.Context, cx); err != nil {
			t.Fatal(err)
		}
		if got.Seq != cx.GetSeq() || got.Used != cx.GetUsage().GetUsed() || len(got.Items) != len(cx.GetMessages()) {
			t.Fatalf("at seq %d: page seq %d used %d items %d; replay inspect seq %d used %d messages %d",
				at, got.Seq, got.Used, len(got.Items), cx.GetSeq(), cx.GetUsage().GetUsed(), len(cx.GetMessages()))
		}
		for i, m := range cx.GetMessages() {
			it := got.Items[i]
			if it.ID != m.GetId() || it.Layer != m.GetLayer() || it.Tokens != m.GetTokens() || it.Content != m.GetContent() {
				t.Errorf("at seq %d item %d: page %s/%s %d tokens, replay inspect %s/%s %d tokens", at, i+1, it.Layer, it.ID, it.Tokens, m.GetLayer(), m.GetId(), m.GetTokens())
			}
		}
		checked++
		for _, it := range got.Items {
			if it.Layer == "memory" {
				memory++
			}
		}
	}
	t.Logf("compared %d points, %d memory items among them", checked, memory)
	if checked != 5 {
		t.Fatalf("checked %d points", checked)
	}
}

// TestBrowserLiveUpdate: an open session page shows an append within 1 s
// of its acknowledgement, without reloading (a marker set on the page's
// window survives).
func TestBrowserLiveUpdate(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 2)
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s1"), chromedp.WaitVisible(chromedp.CSS("#livebadge.on")),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = 1`))
	before := readContext(t, b)
	rep, err := u.c.AppendMessages(context.Background(), "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "A new question about the live view"})
	if err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	want := rep.GetResult().GetSeq()
	ctx, cancel := context.WithTimeout(b, time.Second)
	defer cancel()
	err = chromedp.Do(ctx, poll(fmt.Sprintf(`+document.querySelector('#ctx').dataset.seq >= %d`, want)))
	took := time.Since(acked)
	if err != nil {
		t.Fatalf("the page did not show seq %d within 1 s of the append (it shows %d): %v", want, before.Seq, err)
	}
	t.Logf("live update shown %v after the append was acknowledged", took)
	if eval[int](t, b, `window.__noReload || 0`) != 1 {
		t.Fatal("the page reloaded")
	}
	after := readContext(t, b)
	if last := after.Items[len(after.Items)-1]; last.Content != "A new question about the live view" {
		t.Errorf("last item %q", last.Content)
	}
}

// TestBrowserTenantNonAdminRefused: on a tenant node the inspector asks for
// NATS credentials; a principal without the admin role is refused, an
// admin sees the sessions.
func TestBrowserTenantNonAdminRefused(t *testing.T) {
	b := browser(t)
	u := startNode(t, tenantConfig)
	status := func(user, pass string) (int64, string) {
		hdr := network.Headers{}
		if user != "" {
			hdr["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
		}
		if _, err := chromedp.Call(b, network.Enable, network.EnableParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(b, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: hdr}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(b, 20*time.Second)
		defer cancel()
		res, err := chromedp.RunResponse(ctx, chromedp.Navigate(u.base+"/ui/"))
		if err != nil && strings.Contains(err.Error(), "ERR_INVALID_AUTH_CREDENTIALS") {
			// Chromium ends a navigation answered 401 to the credentials
			// it sent with this error.
			return 401, ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return res.Status, eval[string](t, b, `document.body.innerText`)
	}
	if code, body := status("agent-a1", "a1-secret"); code != 403 || !strings.Contains(body, "not an admin") {
		t.Errorf("writer agent-a1: %d %q, want 403 not an admin", code, body)
	}
	if code, body := status("front-u2", "u2-secret"); code != 403 {
		t.Errorf("reader front-u2: %d %q, want 403", code, body)
	}
	if code, _ := status("ops", "wrong"); code != 401 {
		t.Errorf("ops with a wrong password: %d, want 401", code)
	}
	if code, body := status("ops", "ops-secret"); code != 200 || !strings.Contains(body, "Sessions") {
		t.Errorf("admin ops: %d %q, want 200 and the list", code, body)
	}
}

// tenantConfig runs the example multi-tenant configuration.
func tenantConfig(c *node.Config) {
	c.NATSConfig, c.Tenants = "../examples/auth/nats.conf", "../examples/auth/tenants.json"
	c.NATSUser, c.NATSPassword = "node", "node-secret"
	c.NATSAPIUser, c.NATSAPIPassword = "node-api", "node-api-secret"
}
