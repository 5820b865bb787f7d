package inspector_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// converse creates session id of user u and appends turns (user,
// assistant, user…), then consolidates it.
func (u *uiNode) converse(t *testing.T, id, user string, turns ...string) *memoryv1.ConsolidateReply {
	t.Helper()
	ctx := context.Background()
	if _, err := u.c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, AgentId: "helper", SystemPrompt: "You help."}); err != nil {
		t.Fatal(err)
	}
	for i, text := range turns {
		role := memoryv1.Role_ROLE_USER
		if i%2 == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		if _, err := u.c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: role, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := u.c.Consolidate(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestScopesConsolidation: the scopes page lists the values consolidation
// filed for review beside the current value, and each entry's source
// session (its conversation), messages (each linked) and confidence,
// with a form to settle each (TestScopesAdminActions posts them).
func TestScopesConsolidation(t *testing.T) {
	u := startNode(t, nil)
	ctx := context.Background()
	if _, err := u.c.Configure(ctx, client.User("u1"), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{ConflictStrategy: "review"}}); err != nil {
		t.Fatal(err)
	}
	first := u.converse(t, "s1", "u1", "I live in Oslo.", "Cool.")
	if rep := u.converse(t, "s2", "u1", "Big news: I moved to Bergen last week.", "Congrats!"); len(rep.GetFacts()) != 1 || rep.GetFacts()[0].GetOutcome() != "review" {
		t.Fatalf("consolidate s2: %v", rep.GetFacts())
	}
	cur, err := u.c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs := cur.GetMetadata()["source_messages"]
	if msgs == "" || len(first.GetFacts()) != 1 {
		t.Fatalf("entry metadata %v, facts %v", cur.GetMetadata(), first.GetFacts())
	}
	code, body := get(t, u.base, "/ui/scopes?kind=user&id=u1", nil, "", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	conflicts, _, _ := strings.Cut(body[strings.Index(body, `id="conflicts"`):], "</section>")
	for _, want := range []string{`data-key="fact/user/home_city"`, "Oslo", "Bergen", `href="/ui/s/s2/conversation"`, "confidence <b>" + cur.GetMetadata()["confidence"] + "</b>", `action="/ui/act/settle"`, `value="accept"`, `value="reject"`} {
		if !strings.Contains(conflicts, want) {
			t.Errorf("conflicts section lacks %q:\n%s", want, conflicts)
		}
	}
	// The entry itself: its source session, its messages, its confidence.
	entries := body[strings.Index(body, `id="entries"`):]
	for _, want := range []string{`class="src-session">s1</a>`, "conf. <b>" + cur.GetMetadata()["confidence"] + "</b>"} {
		if !strings.Contains(entries, want) {
			t.Errorf("entries lack %q", want)
		}
	}
	// A key's versions show it all: session, user, messages, confidence.
	_, body = get(t, u.base, "/ui/scopes?kind=user&id=u1&key=fact/user/home_city", nil, "", "")
	versions := body[strings.Index(body, `class="versions"`):]
	for _, want := range []string{`from session <a href="/ui/s/s1/conversation" class="src-session">s1</a>`,
		`<a href="/ui/s/s1/m/` + strings.Split(msgs, ",")[0] + `" class="src-message"><code>` + strings.Split(msgs, ",")[0] + "</code></a>", "user <b>u1</b>",
		"confidence <b>" + cur.GetMetadata()["confidence"] + "</b>"} {
		if !strings.Contains(versions, want) {
			t.Errorf("the key's versions lack %q", want)
		}
	}
	// A value consolidated into another key says which, and the new one
	// what it replaces.
	u.converse(t, "s3", "u2", "I prefer tea.", "Noted.", "Actually, I prefer coffee now.", "Coffee it is.")
	_, body = get(t, u.base, "/ui/scopes?kind=user&id=u2", nil, "", "")
	if !strings.Contains(body, "→ <b>fact/user/prefers/coffee</b>") {
		t.Errorf("user u2's entries do not say tea went into coffee")
	}
	_, body = get(t, u.base, "/ui/scopes?kind=user&id=u2&key=fact/user/prefers/tea", nil, "", "")
	if !strings.Contains(body, "consolidated into <b>fact/user/prefers/coffee</b>") {
		t.Errorf("tea's versions do not say it went into coffee")
	}
	_, body = get(t, u.base, "/ui/scopes?kind=user&id=u2&key=fact/user/prefers/coffee", nil, "", "")
	if !strings.Contains(body, "replaces <q>tea</q>") {
		t.Errorf("coffee's versions do not say it replaces tea")
	}
	// Settled, the conflict leaves the page.
	if _, err := u.c.Settle(ctx, client.User("u1"), "fact/user/home_city", true); err != nil {
		t.Fatal(err)
	}
	if _, body = get(t, u.base, "/ui/scopes?kind=user&id=u1", nil, "", ""); strings.Contains(body, `id="conflicts"`) {
		t.Errorf("a settled conflict still shows")
	}
}
