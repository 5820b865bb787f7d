package node_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The agent types of examples/auth/tenants.json: a1 is a database
// specialist, a2 a support specialist.
const (
	typeA1 = "database-specialist"
	typeA2 = "support-specialist"
)

// seedAgentTypeVictim writes a2's type scope's entry (a2, a writer of its
// type, writes it) and returns its subject, which no attack may change.
func seedAgentTypeVictim(t *testing.T, tu tenants) string {
	t.Helper()
	if _, err := tu.a2.c.Put(context.Background(), client.AgentType(typeA2), &memoryv1.PutEntryRequest{Key: "runbook", Value: []byte("support escalation ladder")}); err != nil {
		t.Fatalf("seed agent type entry: %v", err)
	}
	return events.ScopeSubject("agent_type", typeA2)
}

// addAgentTypeAttacks are the attack rows of agent-type scopes: a1 reaches
// only its own type's scope, never a2's, and claims no type in a body that
// its tenants entry does not give it; a session of another type created
// for a1's user by the admin shows a1 none of that type's entries.
func addAgentTypeAttacks(t *testing.T, tn *tenantNode, tu tenants, add func(want, name string, run func() outcome)) {
	a1 := tu.a1
	ctx := context.Background()
	req := func(subject string, body proto.Message) func() outcome {
		return func() outcome { return a1.do(subject, body) }
	}
	other := "agent_type." + typeA2
	for op, body := range map[string]proto.Message{
		"get": &memoryv1.GetEntryRequest{Key: "runbook"}, "put": &memoryv1.PutEntryRequest{Key: "runbook", Value: []byte("x")},
		"list": &memoryv1.ListEntriesRequest{}, "history": &memoryv1.HistoryRequest{Key: "runbook"},
		"delete": &memoryv1.DeleteEntryRequest{Key: "runbook"}, "search": &memoryv1.SearchEntriesRequest{Query: "support"},
		"rollback": &memoryv1.RollbackEntryRequest{Key: "runbook", ToVersion: 1}, "watch": &memoryv1.WatchRequest{},
		"export": &memoryv1.ExportEntriesRequest{}, "import": &memoryv1.ImportEntriesRequest{Keys: []*memoryv1.KeyHistory{{Key: "runbook",
			Versions: []*memoryv1.Entry{{Key: "runbook", Value: []byte("planted v1")}, {Key: "runbook", Value: []byte("planted v2")}}}}},
	} {
		add("403", "scope "+other+" "+op+" (another type)", req("mem.v1.scope."+other+"."+op, body))
	}
	for _, sc := range []string{"agent_type." + typeA1, other} {
		add("403", "configure "+sc+" (not admin)", req("mem.v1.scope."+sc+".configure", &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{MaxEntries: 1}}))
		add("403", "erase scope "+sc+" (not admin)", req("mem.v1.scope."+sc+".erase", &memoryv1.EraseRequest{Reason: "attack"}))
	}
	add("403", "create session claiming agent_type "+typeA2, req("mem.v1.session.s-type1.create",
		&memoryv1.CreateSessionRequest{UserId: "u1", AgentType: typeA2}))
	add("403", "create session claiming agent a1 of agent_type "+typeA2, req("mem.v1.session.s-type2.create",
		&memoryv1.CreateSessionRequest{AgentId: "a1", AgentType: typeA2}))
	add("403", "create session claiming agent_type "+typeA2+" (JSON)", func() outcome {
		return a1.doRaw("mem.v1.session.s-type3.create", []byte(`{"user_id":"u1","agent_type":"`+typeA2+`"}`), "Content-Type", "application/json")
	})
	add("403", "http create session claiming agent_type "+typeA2, func() outcome {
		return tn.httpDo("POST", "/v1/session/s-type4/create", []byte(`{"user_id":"u1","agent_type":"`+typeA2+`"}`), bearer("a1")...)
	})
	// The admin may name any type: its session for a1's user u1 is of a2's
	// type, and a1 reaches the session but never that type's entries.
	if _, err := tu.ops.c.CreateSession(ctx, "s-u1-support", &memoryv1.CreateSessionRequest{UserId: "u1", AgentType: typeA2}); err != nil {
		t.Fatal(err)
	}
	add("hidden", "context assembled for a1 in admin's session of agent_type "+typeA2, func() outcome {
		if _, err := a1.c.AppendMessages(ctx, "s-u1-support", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "what is the support escalation runbook ladder"}); err != nil {
			return outcome{code: client.Code(err), field: err.Error()}
		}
		c, err := a1.c.Context(ctx, "s-u1-support")
		if err != nil {
			return outcome{code: client.Code(err), field: err.Error()}
		}
		j, _ := protojson.Marshal(c)
		return hiddenOutcome(nil, strings.Contains(string(j), "escalation ladder"), string(j))
	})
	// resolve reads the session's type scope as the assembler does: only
	// for a reader of that type.
	add("hidden", "resolve runbook through admin's session of agent_type "+typeA2, func() outcome {
		rep, err := a1.c.Resolve(ctx, "s-u1-support", "runbook")
		return hiddenOutcome(err, rep.GetFound(), rep.GetScope()+" "+string(rep.GetEntry().GetValue()))
	})
	add("hidden", "resolve runbook (JSON) through admin's session of agent_type "+typeA2, func() outcome {
		return hiddenRaw(a1, "mem.v1.scope.session.s-u1-support.resolve", []byte(`{"key":"runbook"}`), "escalation ladder", "agent_type:"+typeA2)
	})
}

// TestAgentTypeScope: an agent reads and writes its type's scope, shared
// with every principal of the type (the admin's entry there is a1's to
// read); a1's sessions take the type from a1's tenants entry, and the
// context of a session of a type-T agent offers the type scope's entry
// among its memory, as it offers the agent's own.
func TestAgentTypeScope(t *testing.T) {
	tn := startTenantNode(t)
	tu := connectTenants(t, tn)
	ctx := context.Background()
	a1, a2, ops := tu.a1.c, tu.a2.c, tu.ops.c
	own := client.AgentType(typeA1)
	if _, err := ops.Put(ctx, own, &memoryv1.PutEntryRequest{Key: "indexes", Value: []byte("composite index column order: equality columns first")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.Put(ctx, own, &memoryv1.PutEntryRequest{Key: "vacuum", Value: []byte("run vacuum analyze after bulk loads")}); err != nil {
		t.Fatalf("a1 writes its type's scope: %v", err)
	}
	got, err := a1.GetEntry(ctx, own, "indexes", 0)
	if err != nil || !strings.Contains(string(got.GetValue()), "equality columns") {
		t.Fatalf("a1 reads its type's scope: %v %v", got, err)
	}
	if _, err := a2.GetEntry(ctx, own, "vacuum", 0); client.Code(err) != 403 {
		t.Fatalf("a2 (another type) reads %s: %v, want 403", typeA1, err)
	}
	if _, err := a1.CreateSession(ctx, "s-db", &memoryv1.CreateSessionRequest{UserId: "u1", MaxContextTokens: 4000, ReservedOutputTokens: 500}); err != nil {
		t.Fatal(err)
	}
	info, err := a1.Get(ctx, "s-db")
	if err != nil || info.GetAgentType() != typeA1 {
		t.Fatalf("session s-db's type: %v %v, want %s (from a1's tenants entry)", info, err, typeA1)
	}
	if _, err := a1.AppendMessages(ctx, "s-db", userMsg("which composite index column order should I use?")); err != nil {
		t.Fatal(err)
	}
	cx, err := a1.Context(ctx, "s-db")
	if err != nil {
		t.Fatal(err)
	}
	var memory strings.Builder
	for _, m := range cx.GetMessages() {
		if m.GetLayer() == "memory" {
			memory.WriteString(m.GetContent())
		}
	}
	if !strings.Contains(memory.String(), "equality columns first") {
		j, _ := protojson.Marshal(cx)
		t.Fatalf("the context of a %s session does not offer its type's entry:\n%s", typeA1, j)
	}
	// resolve looks in the type scope too, as the assembler does.
	r, err := a1.Resolve(ctx, "s-db", "vacuum")
	if err != nil || !r.GetFound() || r.GetScope() != "agent_type:"+typeA1 || !strings.Contains(string(r.GetEntry().GetValue()), "vacuum analyze") {
		t.Fatalf("a1 resolves its type's key through s-db: %v %v, want agent_type:%s", r, err, typeA1)
	}
}
