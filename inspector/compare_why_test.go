package inspector_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestCompareSaysWhy: between A and B a compression happens and a new
// user message about another subject changes the memory section. The
// comparison sums up the batches between (messages appended, the user
// messages named, compressions, the sections chosen, each linked to its
// row of the timeline) and gives the changes their reasons: a message
// summarized away names its summary and the compression's batch, an
// appended message its append's batch, the new ROM its activation, a
// memory item that left or entered names the user message whose sections
// were chosen again (and, once its entry is erased, that its text is gone).
func TestCompareSaysWhy(t *testing.T) {
	u := startNode(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	notes := map[string]string{
		"kettle-note": "The blue kettle order A-1001 cracked; the refund went to the Visa card.",
		"lamp-note":   "The brass desk lamp flickers when dimmed; a replacement bulb was sent by post.",
	}
	for k, v := range notes {
		if _, err := u.c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: k, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := u.c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1", SystemPrompt: "You are the support agent.",
		MaxContextTokens: 1200, ReservedOutputTokens: 200, Assembly: &memoryv1.AssemblyConfig{Memory: true, MemoryPct: 3}}); err != nil {
		t.Fatal(err)
	}
	turn := func(user string) (appendSeq uint64, userID string, compressions uint32) {
		t.Helper()
		rep, err := u.c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: user},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "I am sorry to hear that. I opened a ticket and will write back within a day."})
		if err != nil {
			t.Fatal(err)
		}
		return u.c.LastWriteSeq(), rep.GetMessageIds()[0], rep.GetCompressions()
	}
	turn("My blue kettle cracked, can you refund the kettle to my Visa card?")
	cx, err := u.c.Context(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	a := cx.GetSeq() // the kettle question's sections
	if !strings.Contains(fmt.Sprint(cx.GetMessages()), "kettle-note") {
		t.Fatalf("the kettle question's memory lacks the kettle note: %v", cx.GetMessages())
	}
	var compressed bool
	for i := 0; i < 60 && !compressed; i++ {
		_, _, n := turn(fmt.Sprintf("Turn %d: the kettle refund, is it on its way to the Visa card yet?", i))
		compressed = n > 0
	}
	if !compressed {
		info, _ := u.c.Get(ctx, "s1")
		t.Fatalf("no append compressed: %v", info)
	}
	// A new ROM, activated by the next user message.
	if _, err := u.c.Kernel(ctx, "s1", &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_UpdateRom{UpdateRom: &memoryv1.Rom{SystemPrompt: "You are the support agent. Be brief."}}}); err != nil {
		t.Fatal(err)
	}
	lampSeq, lampID, _ := turn("Another thing: my brass desk lamp flickers when dimmed. What about the lamp?")
	cx, err = u.c.Context(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	b := cx.GetSeq()
	if b <= lampSeq {
		t.Fatalf("the lamp question's sections (seq %d) are not stored after its append (seq %d)", b, lampSeq)
	}
	code, body := get(t, u.base, fmt.Sprintf("/ui/s/s1/compare?a=%d&b=%d", a, b), nil, "", "")
	if code != 200 {
		t.Fatalf("compare: %d\n%s", code, body)
	}
	happened := sectionOf(body, "between")
	for _, re := range []string{
		`\d+ messages appended`,
		`user messages .*` + lampID,
		`\d+ compressions?`,
		fmt.Sprintf(`<a href="/ui/s/s1/timeline\?seq=%d#seq%d">seq %d</a>`, b, b, b),
		`sections chosen for message ` + lampID,
	} {
		if !regexp.MustCompile(re).MatchString(happened) {
			t.Errorf("the summary of what happened lacks %s:\n%s", re, happened)
		}
	}
	changes := sectionOf(body, "changes")
	// The first user message left L1, summarized: the reason names the
	// summary and the batch that made it, which the timeline shows.
	m := regexp.MustCompile(`− L1: user m1 [^<]*<span class="reason">summarized into ([^ ,]+)[^(<]* \(compression at <a href="/ui/s/s1/timeline\?seq=(\d+)#seq\d+">seq \d+</a>\)`).FindStringSubmatch(changes)
	if m == nil {
		t.Fatalf("the first message's removal gives no compression as its reason:\n%s", changes)
	}
	_, row := get(t, u.base, "/ui/s/s1/timeline?seq="+m[2]+"&static=1", nil, "", "")
	row = excerptOf(row, `id="seq`+m[2]+`"`)
	row = row[:strings.Index(row, "</li>")]
	if !strings.Contains(row, "L1Summarized") && !strings.Contains(row, "L1Evicted") || !strings.Contains(row, m[1]) {
		t.Errorf("the row of seq %s is not the compression into %s:\n%s", m[2], m[1], row)
	}
	// The lamp question was appended between, at its append's batch.
	if !regexp.MustCompile(fmt.Sprintf(`&#43; L1: user %s [^<]*<span class="reason">appended at <a href="/ui/s/s1/timeline\?seq=%d#seq%d">seq %d</a>`, lampID, lampSeq, lampSeq, lampSeq)).MatchString(changes) {
		t.Errorf("the lamp question is not listed as appended at seq %d:\n%s", lampSeq, changes)
	}
	// The new ROM came with the lamp question's append.
	romWhy := fmt.Sprintf(`<span class="reason">ROM v2 activated at <a href="/ui/s/s1/timeline\?seq=%d#seq%d">seq %d</a>`, lampSeq, lampSeq, lampSeq)
	for _, re := range []string{`ROM version 1 → 2 ` + romWhy, `&#43; ROM: system rom:v2 [^<]*` + romWhy, `− ROM: system rom:v1 [^<]*` + romWhy} {
		if !regexp.MustCompile(re).MatchString(changes) {
			t.Errorf("the changes lack %s:\n%s", re, changes)
		}
	}
	// Two ROM changes: the new ROM stored, then activated.
	if !strings.Contains(happened, "2 ROM changes") {
		t.Errorf("the summary of what happened does not count the ROM stored and activated:\n%s", happened)
	}
	// The lamp note entered the memory section, the kettle note left it,
	// both because the lamp question's sections were chosen.
	why := fmt.Sprintf(`<span class="reason">the sections were chosen again for message %s at <a href="/ui/s/s1/timeline\?seq=%d#seq%d">seq %d</a>`, lampID, b, b, b)
	for _, re := range []string{`&#43; Memory: system memory:user:u1/lamp-note [^<]*` + why, `− Memory: system memory:user:u1/kettle-note [^<]*` + why} {
		if !regexp.MustCompile(re).MatchString(changes) {
			t.Errorf("the changes lack %s:\n%s", re, changes)
		}
	}
	// Once the kettle note is erased, A's memory item has no text left:
	// its removal says so.
	if _, err := u.c.EraseEntry(ctx, client.User("u1"), "kettle-note", "test"); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, u.base, fmt.Sprintf("/ui/s/s1/compare?a=%d&b=%d", a, b), nil, "", "")
	changes = sectionOf(body, "changes")
	if re := `− Memory: system memory:user:u1/#[0-9a-f]+ [^<]*` + why + `; its text was erased since</span>`; !regexp.MustCompile(re).MatchString(changes) {
		t.Errorf("after the erase, the changes lack %s:\n%s", re, changes)
	}
}

// sectionOf is the section of body with id (the whole body when none).
func sectionOf(body, id string) string {
	i := strings.Index(body, `<section class="card cmp" id="`+id+`"`)
	if i < 0 {
		return body
	}
	j := strings.Index(body[i:], "</section>")
	return body[i : i+j]
}
