package node_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestTenantCrossSessionRecall: the attack rows of cross-session recall.
// A new session recalls only what its caller could read directly of its
// own user's sessions (or, without a user, of its agent's sessions without
// a user): never another user's session through a shared agent, never
// another agent's anonymous sessions, never a user's sessions from an
// anonymous session of their agent, never an erased session. Positive
// controls show that each session does recall its own history, so a
// refusal is not an empty search.
func TestTenantCrossSessionRecall(t *testing.T) {
	tn := startTenantNode(t)
	tu := connectTenants(t, tn)
	ctx := context.Background()
	a1, a2, ops, front1 := tu.a1.c, tu.a2.c, tu.ops.c, tu.front1.c
	say := func(c *client.Client, id, user, agent, text string) {
		t.Helper()
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, AgentId: agent, MaxContextTokens: 4000, ReservedOutputTokens: 500}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		if _, err := c.AppendMessages(ctx, id, userMsg(text)); err != nil {
			t.Fatalf("append %s: %v", id, err)
		}
	}
	// Victims: u2's session served by a1 (the shared agent, created by the
	// admin), a2's anonymous session, and u1's session that gets erased.
	say(ops, "u2-via-a1", "u2", "a1", "my locker code is 7319 walrus")
	say(a2, "anon-a2", "", "", "the vault phrase is purple otter")
	say(a1, "u1-erased", "u1", "", "my passport number is X99QZ")
	if _, err := a1.EraseSession(ctx, "u1-erased", "attack row"); err != nil {
		t.Fatal(err)
	}
	// Own history, for the positive controls.
	say(a1, "u1-old", "u1", "", "my favourite lake is Bled")
	say(a1, "anon-a1", "", "", "the garden gate code is 4482")

	contextOf := func(c *client.Client, id, q string) string {
		t.Helper()
		if _, err := c.AppendMessages(ctx, id, userMsg(q)); err != nil {
			t.Fatalf("append %s: %v", id, err)
		}
		cx, err := c.Context(ctx, id)
		if err != nil {
			t.Fatalf("context %s: %v", id, err)
		}
		var b strings.Builder
		for _, m := range cx.GetMessages() {
			if m.GetLayer() == "recalled" {
				b.WriteString(m.GetContent())
				b.WriteString("\n")
			}
		}
		return b.String()
	}
	newSession := func(c *client.Client, id, user string) {
		t.Helper()
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, MaxContextTokens: 4000, ReservedOutputTokens: 500}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	newSession(a1, "u1-new", "u1")
	newSession(a1, "anon-a1-new", "")
	newSession(front1, "u1-front", "u1")
	for _, row := range []struct {
		name     string
		c        *client.Client
		session  string
		question string
		leak     string // must not be recalled
		want     string // must be recalled ("" : none)
	}{
		{"u1's session, u2's history through the shared agent a1", a1, "u1-new", "what is my locker code, the walrus one?", "7319", ""},
		{"u1's session, a2's anonymous session", a1, "u1-new", "what is the vault phrase, purple otter?", "purple otter", ""},
		{"u1's session, u1's erased session", a1, "u1-new", "what is my passport number?", "X99QZ", ""},
		{"u1's session, a1's anonymous session", a1, "u1-new", "what is the garden gate code?", "4482", ""},
		{"u1's session, own history (control)", a1, "u1-new", "which lake is my favourite?", "", "Bled"},
		{"a1's anonymous session, u1's history", a1, "anon-a1-new", "which lake is my favourite, Bled?", "my favourite lake", ""},
		{"a1's anonymous session, u2's history through a1", a1, "anon-a1-new", "what is the locker code, walrus?", "7319", ""},
		{"a1's anonymous session, a2's anonymous session", a1, "anon-a1-new", "what is the vault phrase, purple otter?", "is purple otter", ""},
		{"a1's anonymous session, own agent's (control)", a1, "anon-a1-new", "what is the garden gate code?", "", "4482"},
		{"u1's front end, u2's history", front1, "u1-front", "what is the locker code, walrus?", "7319", ""},
		{"u1's front end, u1's history by a1 (control)", front1, "u1-front", "which lake is my favourite?", "", "Bled"},
	} {
		got := contextOf(row.c, row.session, row.question)
		if row.leak != "" && strings.Contains(got, row.leak) {
			t.Errorf("%s: recalled %q:\n%s", row.name, row.leak, got)
		}
		if row.want != "" && !strings.Contains(got, row.want) {
			cx, _ := row.c.Context(ctx, row.session)
			t.Errorf("%s: did not recall %q:\n%s", row.name, row.want, protojson.Format(cx))
		}
	}
}
