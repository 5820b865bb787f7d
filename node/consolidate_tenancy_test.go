package node_test

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestConsolidateTenants: on the example tenant node, an agent consolidates
// its own user's session into that user's scope only; another agent may
// not consolidate it (403), and the other user's front end does not read
// the facts.
func TestConsolidateTenants(t *testing.T) {
	tn := startTenantNode(t)
	a1, a2 := tn.as(t, "agent-a1", "a1-secret"), tn.as(t, "agent-a2", "a2-secret")
	f1, f2 := tn.as(t, "front-u1", "u1-secret"), tn.as(t, "front-u2", "u2-secret")
	ctx := context.Background()
	for _, s := range []struct {
		who      *tenant
		id, user string
		text     string
	}{{a1, "sa1", "u1", "I live in Oslo."}, {a2, "sa2", "u2", "I live in Lima."}} {
		if _, err := s.who.c.CreateSession(ctx, s.id, &memoryv1.CreateSessionRequest{UserId: s.user}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.who.c.AppendMessages(ctx, s.id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: s.text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a2.c.Consolidate(ctx, "sa1", false); client.Code(err) != 403 {
		t.Fatalf("a2 consolidating a1's session: %v, want 403", err)
	}
	for _, c := range []struct {
		who *tenant
		id  string
	}{{a1, "sa1"}, {a2, "sa2"}} {
		rep, err := c.who.c.Consolidate(ctx, c.id, false)
		if err != nil || len(rep.GetFacts()) != 1 || rep.GetFacts()[0].GetOutcome() != "written" {
			t.Fatalf("%s: %v %v", c.id, err, rep)
		}
	}
	e, err := f1.c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0)
	if err != nil || e.GetMetadata()["fact_value"] != "Oslo" {
		t.Fatalf("u1's fact: %v %v", err, e)
	}
	if e, err := f2.c.GetEntry(ctx, client.User("u2"), "fact/user/home_city", 0); err != nil || e.GetMetadata()["fact_value"] != "Lima" {
		t.Fatalf("u2's fact: %v %v", err, e)
	}
	if _, err := f2.c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0); client.Code(err) != 403 {
		t.Fatalf("u2's front end reading u1's fact: %v, want 403", err)
	}
}
