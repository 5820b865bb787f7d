package inspector_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/inspector"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestComparePage: two moments of a session compared: the tokens of each
// section at both, the items added (new turns), removed (turns
// summarized away) and moved between layers (a summary from L1 to L2),
// the ROM version of each; a point out of range is a 404 that says so, a
// malformed one a 400 naming the field.
func TestComparePage(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "before", "u0", "a1", 1) // stream seqs before s1 began
	u.session(t, "s1", "u1", "a1", 2)
	early := u.c.LastWriteSeq()
	u.appendTurns(t, "s1", 2, 14)
	code, body := get(t, u.base, fmt.Sprintf("/ui/s/s1/compare?a=%d&b=latest", early), nil, "", "")
	if code != 200 {
		t.Fatalf("compare: %d\n%s", code, body)
	}
	for _, want := range []string{`data-a="` + fmt.Sprint(early) + `"`, `id="cmpsections"`, `data-layer="l1"`, `data-kind="added"`, `data-kind="removed"`, "ROM v1"} {
		if !strings.Contains(body, want) {
			t.Errorf("compare page lacks %q", want)
		}
	}
	// The first turn's message was in L1 at A and is summarized by B.
	if !regexp.MustCompile(`data-kind="removed">− L1: user m1 `).MatchString(body) {
		t.Errorf("the first message is not listed as removed from L1:\n%s", excerptOf(body, "changes"))
	}
	// Between two later points a summary moves from L1 to L2 (or one is
	// added to L2): the sections' tokens differ.
	if !strings.Contains(body, `class="up"`) && !strings.Contains(body, `class="down"`) {
		t.Errorf("no section's tokens changed:\n%s", excerptOf(body, "cmpsections"))
	}
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/ui/s/s1/compare?a=99999999", 404, "after this session&#39;s latest batch"},
		{"/ui/s/s1/compare?a=1", 404, "before this session began"},
		{"/ui/s/s1/compare?a=x", 400, "a: &#34;x&#34; is not a stream sequence"},
		{"/ui/s/s1/compare?b=0", 400, "b: &#34;0&#34;"},
		{"/ui/s/nobody/compare", 404, "does not exist"},
	} {
		code, body := get(t, u.base, c.path, nil, "", "")
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d, want %d with %q:\n%s", c.path, code, c.code, c.want, excerptOf(body, "error"))
		}
	}
}

// TestCompareFindsMovedItems: a message verbatim in L1 at A and recalled
// from swap at B is listed as moved from L1 to the recalled section.
func TestCompareFindsMovedItems(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 1)
	var seqs []uint64
	for i := 1; i < 30; i++ {
		u.appendTurns(t, "s1", i, 1)
		seqs = append(seqs, u.c.LastWriteSeq())
	}
	for i, a := range seqs {
		for _, b := range seqs[i+1:] {
			_, body := get(t, u.base, fmt.Sprintf("/ui/s/s1/compare?a=%d&b=%d", a, b), nil, "", "")
			if regexp.MustCompile(`data-kind="moved">→ L1 → Recalled: system recalled:m\d+ · message m\d+ · seq \d+ \(from swap\)`).MatchString(body) {
				return
			}
		}
		if i > 12 {
			break
		}
	}
	_, body := get(t, u.base, fmt.Sprintf("/ui/s/s1/compare?a=%d", seqs[3]), nil, "", "")
	t.Fatalf("no pair of points shows a message moved from L1 to Recalled:\n%s", excerptOf(body, "changes"))
}

func excerptOf(body, id string) string {
	i := strings.Index(body, id)
	if i < 0 {
		return body[:min(len(body), 3000)]
	}
	return body[i:min(len(body), i+3000)]
}

// countingLog counts the loads of a session's whole log (time travel's
// replay).
type countingLog struct {
	*events.JetStreamLog
	loads atomic.Int64
}

func (c *countingLog) Load(ctx context.Context, subject string, after uint64, fn func(events.Record) error) (uint64, error) {
	c.loads.Add(1)
	return c.JetStreamLog.Load(ctx, subject, after, fn)
}

// TestContextPageReplaysNothing: the context page and the timeline's
// panel at the latest point read the context from the live session (the
// API) and their sources from the session's index: no replay of its log
// (before, each load replayed the whole session: most of a second at
// 5,000 turns). A past point is still replayed, and the live sources name
// the same as the replay's.
func TestContextPageReplaysNothing(t *testing.T) {
	u := startNode(t, nil)
	ctx := context.Background()
	if _, err := u.c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1", SystemPrompt: "You are the support agent.",
		MaxContextTokens: 1200, ReservedOutputTokens: 200}); err != nil {
		t.Fatal(err)
	}
	u.appendTurns(t, "s1", 0, 14)
	if _, err := u.c.Promote(ctx, "s1", "m3"); err != nil {
		t.Fatal(err)
	}
	u.appendTurns(t, "s1", 14, 1)
	// A message with the client's id (read from the log), a batch of the
	// most messages an append takes (64) and one of a few (their turns
	// from the index).
	long := []*memoryv1.MessageInput{{Id: "c-1", Role: memoryv1.Role_ROLE_USER, Content: "My own id."}}
	for i := range 63 {
		role := memoryv1.Role_ROLE_ASSISTANT
		if i%3 == 0 {
			role = memoryv1.Role_ROLE_USER
		}
		long = append(long, &memoryv1.MessageInput{Role: role, Content: fmt.Sprintf("short %d", i)})
	}
	if _, err := u.c.AppendMessages(ctx, "s1", long...); err != nil {
		t.Fatal(err)
	}
	if _, err := u.c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "one"},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "two"}, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "three"},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "four"}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(u.nc)
	if err != nil {
		t.Fatal(err)
	}
	jl, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	log := &countingLog{JetStreamLog: jl}
	in, err := inspector.New(inspector.DefaultConfig(), inspector.Deps{Conn: u.nc, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	srv := httptest.NewServer(in)
	defer srv.Close()
	code, page := get(t, srv.URL, "/ui/s/s1", nil, "", "")
	if code != 200 {
		t.Fatalf("context page: %d\n%s", code, page)
	}
	code, panel := get(t, srv.URL, "/ui/s/s1/at?all=1", nil, "", "")
	if code != 200 {
		t.Fatalf("panel: %d\n%s", code, panel)
	}
	if n := log.loads.Load(); n != 0 {
		t.Errorf("the context page and the latest panel replayed the log %d times", n)
	}
	info, err := u.c.Get(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	code, replayed := get(t, srv.URL, fmt.Sprintf("/ui/s/s1/at?all=1&seq=%d&replay=1", info.GetSeq()), nil, "", "")
	if code != 200 || log.loads.Load() == 0 {
		t.Fatalf("time travel asked: %d, %d loads", code, log.loads.Load())
	}
	src := regexp.MustCompile(`<span class="src">([^<]*)</span>`)
	why := regexp.MustCompile(`<div class="why">([^<]*)</div>`)
	for _, re := range []*regexp.Regexp{src, why} {
		live, past := re.FindAllStringSubmatch(page, -1), re.FindAllStringSubmatch(replayed, -1)
		if len(live) == 0 || len(live) != len(past) {
			t.Fatalf("%d items live, %d replayed", len(live), len(past))
		}
		for i := range live {
			if live[i][1] != past[i][1] {
				t.Errorf("item %d: live %q, replayed %q", i+1, live[i][1], past[i][1])
			}
		}
	}
	for _, want := range []string{"message m3 · seq 3 · turn 2", "promoted back from swap", "message c-1 · seq 31 · turn 16", "message m98 · seq 98 · turn 39"} {
		if !strings.Contains(page, want) {
			t.Errorf("the context page lacks %q: %q", want, src.FindAllString(page, -1))
		}
	}
}

// TestContextPageWhy: an item of the memory section says its score and
// rank among the candidates; the page shows the allocation's room and
// caps and the best candidates left out, with their score and why (no
// room), named by the digest of their key, never the key.
func TestContextPageWhy(t *testing.T) {
	u := startNode(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 12 {
		if _, err := u.c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: fmt.Sprintf("kettle-note-%02d", i),
			Value: []byte(fmt.Sprintf("Note %d: the blue kettle order A-%d was refunded to the Visa card after the crack was reported.", i, 1000+i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := u.c.SearchEntries(ctx, client.User("u1"), &memoryv1.SearchEntriesRequest{Query: "kettle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1", SystemPrompt: "You are the support agent.",
		MaxContextTokens: 2200, ReservedOutputTokens: 200, Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, MemoryPct: 5}}); err != nil {
		t.Fatal(err)
	}
	u.appendTurns(t, "s1", 0, 2)
	code, body := get(t, u.base, "/ui/s/s1", nil, "", "")
	if code != 200 {
		t.Fatalf("context page: %d\n%s", code, body)
	}
	for _, re := range []string{
		`<div class="why">why: score \d\.\d\d · rank 1 of \d+ memory candidates</div>`,
		`id="plan"`,
		`the memory section <b>100</b>`,
		`<td>memory</td><td>user:u1 · key #[0-9a-f]{12} v1</td><td>\d\.\d\d</td><td>\d+</td><td>(\d+|—)</td><td class="reason">no room</td>`,
	} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("the context page lacks %s:\n%s", re, excerptOf(body, "memory"))
		}
	}
	// The page names the chosen entries by key (as the context does), the
	// left-out ones only by digest.
	plan := excerptOf(body, `id="plan"`)
	plan = plan[:strings.Index(plan, "</section>")]
	if strings.Contains(plan, "kettle-note-") {
		t.Errorf("the left-out candidates name a key:\n%s", plan)
	}
}
