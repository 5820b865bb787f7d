package inspector_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

type convRow struct {
	N     int    `json:"n"`
	Role  string `json:"role"`
	Text  string `json:"text"`
	Where string `json:"where"`
	Batch string `json:"batch"`
}

const readConvJS = `[...document.querySelectorAll('#conversation li.msg')].map(li => ({
  n: +li.dataset.n, role: li.querySelector('.msghead .role').textContent.trim(),
  text: (li.querySelector(':scope > pre.content') || {textContent: ''}).textContent,
  where: li.dataset.where || '', batch: li.querySelector('a[href^="timeline?seq="]').getAttribute('href')}))`

// TestBrowserConversation: the conversation shows the transcript as
// appended (roles, text, tool calls and their results), where each message
// is now (verbatim in L1 for the latest, summarized or archived for the
// first after compression), links each to its batch on the timeline, and
// fetches a long message's rest and a large tool result only on demand.
func TestBrowserConversation(t *testing.T) {
	b := browser(t)
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 16)
	ctx := context.Background()
	long := strings.Repeat("A long pasted log line with details. ", 200) // 7,400 characters
	big := strings.Repeat("row 42: refunded;", 7000)                     // > 100 KiB: stored as large data
	if _, err := u.c.CreateSession(ctx, "s2", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1", MaxContextTokens: 30000}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.c.AppendMessages(ctx, "s2",
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: long},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "call-7", Name: "export_orders", Arguments: `{"since":"2026-01-01"}`}}},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call-7", Name: "export_orders", Content: big}); err != nil {
		t.Fatal(err)
	}
	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s1/conversation"), chromedp.WaitVisible(chromedp.CSS("#conversation")))
	rows := eval[[]convRow](t, b, readConvJS)
	if len(rows) != 32 {
		t.Fatalf("%d messages shown, want 32", len(rows))
	}
	for i, r := range rows[:32] {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if r.N != i+1 || r.Role != want || !strings.Contains(r.Text, fmt.Sprintf("A-%d", 1000+i/2)) {
			t.Errorf("message %d: %+v, want %s about A-%d", i+1, r, want, 1000+i/2)
		}
	}
	if r := rows[0]; r.Where == "" || strings.HasPrefix(r.Where, "in L1") {
		t.Errorf("the first message is %q after 16 turns in a 1,200-token budget: want summarized or archived", r.Where)
	}
	if r := rows[31]; !strings.HasPrefix(r.Where, "in L1") {
		t.Errorf("the last turn's answer is %q, want in L1", r.Where)
	}
	// Each message links to its batch on the timeline.
	do(t, b, 20*time.Second, chromedp.Click(chromedp.CSS(`#m1 a[href^="timeline?seq="]`)),
		chromedp.WaitVisible(chromedp.CSS("#timeline")), poll(`document.querySelector('#ctx') !== null`))
	seq := strings.TrimPrefix(rows[0].Batch, "timeline?seq=")
	if got := eval[string](t, b, `document.querySelector('#timeline .ev.current').dataset.seq`); got != seq {
		t.Errorf("the timeline marks seq %s, want the batch of message 1, seq %s", got, seq)
	}
	if got := eval[string](t, b, `document.querySelector('#timeline .ev.current').textContent`); !strings.Contains(got, "message 1") || !strings.Contains(got, "A-1000") {
		t.Errorf("the batch of message 1 reads %q", got)
	}

	do(t, b, 20*time.Second, chromedp.Navigate(u.base+"/ui/s/s2/conversation"), chromedp.WaitVisible(chromedp.CSS("#conversation")))
	rows = eval[[]convRow](t, b, readConvJS)
	if len(rows) != 3 {
		t.Fatalf("s2: %d messages shown, want 3", len(rows))
	}
	// The long message: its start, then all of it on demand.
	if r := rows[0]; len(r.Text) >= len(long) || !strings.HasPrefix(long, r.Text) {
		t.Errorf("long message shows %d characters, want its start only", len(r.Text))
	}
	do(t, b, 20*time.Second, chromedp.Click(chromedp.CSS(`#m1 a.more`)),
		poll(fmt.Sprintf(`document.querySelector('#m1 > pre.content').textContent.length === %d`, len(long))))
	// The tool call and its result, linked; the stored result on demand.
	if got := eval[string](t, b, `document.querySelector('#m2 .call').textContent`); !strings.Contains(got, "export_orders") || !strings.Contains(got, "2026-01-01") {
		t.Errorf("tool call shows %q", got)
	}
	if got := eval[string](t, b, `document.querySelector('#m3 .call a').getAttribute('href')`); got != "#call-call-7" {
		t.Errorf("tool result links to %q", got)
	}
	do(t, b, 20*time.Second, chromedp.Click(chromedp.CSS(`#m3 .dataref a.more`)),
		poll(fmt.Sprintf(`document.querySelector('#m3 > pre.content').textContent.length === %d`, len(big))))
}

// TestConversationPages: 100 messages a page, the latest page by default,
// ?n= opens the page of a message, the pager says which messages.
func TestConversationPages(t *testing.T) {
	u := startNode(t, nil)
	if _, err := u.c.CreateSession(context.Background(), "s1", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1"}); err != nil {
		t.Fatal(err)
	}
	u.appendTurns(t, "s1", 0, 65) // 130 messages
	ns := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<li class="msg r-\w+" id="m(\d+)"`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	for _, c := range []struct {
		query       string
		first, last string
		count       int
		pager       string
	}{
		{"", "101", "130", 30, "messages 101–130 · page 2 of 2"},
		{"?page=1", "1", "100", 100, "messages 1–100 · page 1 of 2"},
		{"?n=5", "1", "100", 100, "page 1 of 2"},
		{"?n=120", "101", "130", 30, "page 2 of 2"},
	} {
		code, body := get(t, u.base, "/ui/s/s1/conversation"+c.query, nil, "", "")
		got := ns(body)
		if code != 200 || len(got) != c.count || got[0] != c.first || got[len(got)-1] != c.last || !strings.Contains(body, c.pager) {
			t.Errorf("%s: %d, %d messages %v…, want %d from %s to %s and %q", c.query, code, len(got), got[:min(3, len(got))], c.count, c.first, c.last, c.pager)
		}
	}
}
