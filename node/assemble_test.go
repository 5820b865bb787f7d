package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func layerText(cx *memoryv1.ContextReply, layer string) string {
	var b strings.Builder
	for _, m := range cx.GetMessages() {
		if m.GetLayer() == layer {
			b.WriteString(m.GetContent())
			b.WriteString("\n")
		}
	}
	return b.String()
}

// fillSession appends a planted fact and then filler until the fact has
// left L1; it returns the last stream sequence.
func fillSession(t *testing.T, ctx context.Context, c *client.Client, id, fact string) uint64 {
	t.Helper()
	if _, err := c.AppendMessages(ctx, id, userMsg(fact), &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "Noted."}); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	for i := range 50 {
		rep, err := c.AppendMessages(ctx, id, userMsg(fmt.Sprintf("Filler %d: what about lunch and the weather for the outing?", i)),
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("Filler answer %d: sandwiches, sun, a walk by the river.", i)})
		if err != nil {
			t.Fatal(err)
		}
		seq = rep.GetResult().GetSeq()
	}
	cx, err := c.Context(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(layerText(cx, "l1"), fact) {
		t.Fatal("setup: the planted fact is still verbatim in L1")
	}
	return seq
}

func userMsg(text string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text}
}

// TestAssemblerRecallAndMemory: a user message brings back, through the
// node's search and the actor's choice, the forgotten turn that answers it
// (recalled section) and the long-term entries of the session's scopes
// (memory section), each naming its source; a session created with the
// assembler off gets neither.
func TestAssemblerRecallAndMemory(t *testing.T) {
	n, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	for _, id := range []string{"on", "off"} {
		req := &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1", Project: "p1", MaxContextTokens: 1500, ReservedOutputTokens: 500}
		if id == "off" {
			req.Assembly = &memoryv1.AssemblyConfig{}
		}
		if _, err := c.CreateSession(ctx, id, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []struct {
		scope      client.Scope
		key, value string
	}{
		{client.User("u1"), "diet", "u1 is vegetarian and allergic to nuts"},
		{client.Project("p1"), "release", "the Lisbon office release ships on 2026-12-04"},
		{client.Agent("a1"), "tone", "answer the Lisbon team in Portuguese"},
		{client.Global(), "policy", "vault codes are rotated monthly"},
	} {
		if _, err := c.Put(ctx, e.scope, &memoryv1.PutEntryRequest{Key: e.key, Value: []byte(e.value), ContentType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
	}
	const fact = "The vault code for the Lisbon office is 7731."
	for _, id := range []string{"on", "off"} {
		seq := fillSession(t, ctx, c, id, fact)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := n.WaitProjected(wctx, seq); err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := c.AppendMessages(ctx, id, userMsg("What is the vault code for the Lisbon office, and when does the release ship?")); err != nil {
			t.Fatal(err)
		}
	}
	on, err := c.Context(ctx, "on")
	if err != nil {
		t.Fatal(err)
	}
	rec, mem := layerText(on, "recalled"), layerText(on, "memory")
	if !strings.Contains(rec, "7731") || !strings.Contains(rec, "Recalled m1 (user") {
		t.Errorf("recalled section lacks the planted turn:\n%s", rec)
	}
	for _, want := range []string{"Memory project:p1 release (v1): the Lisbon office release ships on 2026-12-04",
		"Memory agent:a1 tone (v1)", "Memory global policy (v1)", "Memory user:u1 diet (v1)"} {
		if !strings.Contains(mem, want) {
			t.Errorf("memory section lacks %q:\n%s", want, mem)
		}
	}
	if u := on.GetUsage(); u.GetUsed() > u.GetBudget() {
		t.Errorf("usage %d over budget %d", u.GetUsed(), u.GetBudget())
	}
	off, err := c.Context(ctx, "off")
	if err != nil {
		t.Fatal(err)
	}
	if off.GetLayers().GetRecalled()+off.GetLayers().GetMemory() != 0 {
		t.Errorf("a session with the assembler off has sections: %v", off.GetLayers())
	}
}

// TestAssemblerFollowsTheCaller: the memory section holds only scopes the
// appending caller may read. The user's front end, appending to the agent's
// session, does not bring the agent's private memory into it; the agent
// does.
func TestAssemblerFollowsTheCaller(t *testing.T) {
	tn := startTenantNode(t)
	a1 := tn.as(t, "agent-a1", "a1-secret")
	front := tn.as(t, "front-u1", "u1-secret")
	ctx := context.Background()
	if _, err := a1.c.CreateSession(ctx, "s-a1", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "plan", Value: []byte("private plan: migrate the billing database")}); err != nil {
		t.Fatal(err)
	}
	if _, err := front.c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: "billing", Value: []byte("u1 pays the billing invoices quarterly")}); err != nil {
		t.Fatal(err)
	}
	rep, err := a1.c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "plan2", Value: []byte("billing database cutover on Friday")})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tn.n.WaitProjected(wctx, rep.GetResult().GetSeq()); err != nil {
		t.Fatal(err)
	}
	ask := func(who *tenant) string {
		if _, err := who.c.AppendMessages(ctx, "s-a1", userMsg("What about the billing database?")); err != nil {
			t.Fatalf("%s: append: %v", who.name, err)
		}
		cx, err := a1.c.Context(ctx, "s-a1")
		if err != nil {
			t.Fatal(err)
		}
		return layerText(cx, "memory")
	}
	if mem := ask(front); strings.Contains(mem, "agent:a1") || !strings.Contains(mem, "user:u1 billing") {
		t.Errorf("front end's append: memory section %q, want user:u1 only", mem)
	}
	if mem := ask(a1); !strings.Contains(mem, "agent:a1 plan") || !strings.Contains(mem, "user:u1 billing") {
		t.Errorf("agent's append: memory section %q, want agent:a1 and user:u1", mem)
	}
}

// TestAssemblerReadsOwnWrites: an entry the caller puts right before a user
// message is in that message's memory section (the memory search waits,
// bounded, for the projection to apply the caller's last write), every
// time, without the client waiting for anything.
func TestAssemblerReadsOwnWrites(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "own", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1", MaxContextTokens: 4500, ReservedOutputTokens: 500}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		value := fmt.Sprintf("the gate code for depot %d is %d", i, 4000+i)
		if _, err := c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: fmt.Sprintf("gate%d", i), Value: []byte(value), ContentType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, "own", userMsg(fmt.Sprintf("What is the gate code for depot %d?", i))); err != nil {
			t.Fatal(err)
		}
		cx, err := c.Context(ctx, "own")
		if err != nil {
			t.Fatal(err)
		}
		if mem := layerText(cx, "memory"); !strings.Contains(mem, value) {
			t.Fatalf("put %d: the memory section lacks the entry just put:\n%s", i, mem)
		}
	}
}
