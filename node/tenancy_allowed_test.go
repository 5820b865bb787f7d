package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestTenantPositiveControls: with the same configuration as the attack
// suite, each principal does everything it is allowed to, and each
// refusal the suite relies on is matched by an allowed twin here (so a
// blanket "deny everything" would fail this test).
func TestTenantPositiveControls(t *testing.T) {
	tn := startTenantNode(t)
	tu := connectTenants(t, tn)
	ctx := context.Background()
	ok := func(u *tenant, what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %s: %v", u.name, what, err)
		}
		t.Logf("%-10s %-45s ok", u.name, what)
	}
	a1 := tu.a1.c
	me := client.Agent("a1")

	// a1's own agent memory, every operation.
	_, err := a1.Put(ctx, me, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("own note")})
	ok(tu.a1, "agent put", err)
	_, err = a1.Put(ctx, me, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("own note v2")})
	ok(tu.a1, "agent put v2", err)
	_, err = a1.GetEntry(ctx, me, "k", 0)
	ok(tu.a1, "agent get", err)
	_, err = a1.ListEntries(ctx, me, &memoryv1.ListEntriesRequest{})
	ok(tu.a1, "agent list", err)
	_, err = a1.History(ctx, me, "k")
	ok(tu.a1, "agent history", err)
	_, err = a1.SearchEntries(ctx, me, &memoryv1.SearchEntriesRequest{Query: "note"})
	ok(tu.a1, "agent search", err)
	_, err = a1.Rollback(ctx, me, &memoryv1.RollbackEntryRequest{Key: "k", ToVersion: 1})
	ok(tu.a1, "agent rollback", err)
	_, err = a1.Configure(ctx, me, &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{MaxEntries: 100}})
	ok(tu.a1, "agent configure", err)
	_, err = a1.DeleteEntry(ctx, me, &memoryv1.DeleteEntryRequest{Key: "k"})
	ok(tu.a1, "agent delete", err)

	// A session of its own user.
	_, err = a1.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1", Project: "p1", App: "shop"})
	ok(tu.a1, "session create (user u1)", err)
	_, err = a1.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "remember the blue door", Id: "door-1"})
	ok(tu.a1, "session append", err)
	_, err = a1.Context(ctx, "s1")
	ok(tu.a1, "session context", err)
	_, err = a1.Get(ctx, "s1")
	ok(tu.a1, "session get", err)
	_, err = a1.Kernel(ctx, "s1", &memoryv1.KernelRequest{Op: &memoryv1.KernelRequest_SetFact{SetFact: &memoryv1.Fact{Key: "door", Value: "blue"}}})
	ok(tu.a1, "session kernel", err)
	_, err = a1.State(ctx, "s1", &memoryv1.StateRequest{Op: memoryv1.StateOp_STATE_OP_SET, Key: "session:x", Value: []byte("1")})
	ok(tu.a1, "session state", err)
	_, err = a1.Recall(ctx, "s1", &memoryv1.RecallRequest{})
	ok(tu.a1, "session recall", err)
	_, err = a1.Search(ctx, "s1", &memoryv1.SearchRequest{Query: "blue door", Scope: memoryv1.SearchScope_SEARCH_SCOPE_USER})
	ok(tu.a1, "session search (user scope)", err)
	_, err = a1.Promote(ctx, "s1", "door-1")
	ok(tu.a1, "session promote", err)
	_, err = a1.ClearRecalled(ctx, "s1")
	ok(tu.a1, "session clear_recalled", err)
	_, err = a1.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_PAUSE, "test")
	ok(tu.a1, "session pause", err)
	_, err = a1.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_RESUME, "test")
	ok(tu.a1, "session resume", err)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	w, err := a1.Follow(wctx, client.FollowSession("s1"), 0)
	ok(tu.a1, "session watch", err)
	if ch, open := <-w.Changes(); !open || ch.ID != "s1" {
		t.Fatalf("a1's watch of its session: %v %v", ch, w.Err())
	}
	cancel()
	for range w.Changes() {
	}

	// Shared scopes it belongs to.
	for _, sc := range []client.Scope{client.Workflow("w1"), client.Global(), client.User("u1"), client.SessionScope("s1")} {
		_, err = a1.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: "n", Value: []byte("shared")})
		ok(tu.a1, sc.String()+" put", err)
		_, err = a1.GetEntry(ctx, sc, "n", 0)
		ok(tu.a1, sc.String()+" get", err)
	}
	for _, sc := range []client.Scope{client.App("shop"), client.Project("p1")} {
		_, err = a1.ListEntries(ctx, sc, &memoryv1.ListEntriesRequest{})
		ok(tu.a1, sc.String()+" list (read only)", err)
	}
	_, err = a1.Resolve(ctx, "s1", "n")
	ok(tu.a1, "resolve", err)
	_, err = a1.Publish(ctx, "s1", "n", "user")
	ok(tu.a1, "publish to user u1", err)
	ref, err := a1.PutData(ctx, []byte("a tool result"), "text/plain", nil, 0)
	ok(tu.a1, "data put", err)
	_, _, err = a1.GetData(ctx, ref.GetId())
	ok(tu.a1, "data get (own)", err)
	_, err = a1.ListSessions(ctx, &memoryv1.ListSessionsRequest{AgentId: "a1", MinSeq: a1.LastWriteSeq()})
	ok(tu.a1, "sessions.list agent a1", err)
	_, err = a1.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: "u1"})
	ok(tu.a1, "sessions.list user u1", err)

	// The user's front end reaches the user's session, whichever agent made it.
	f1 := tu.front1.c
	_, err = f1.Context(ctx, "s1")
	ok(tu.front1, "context of u1's session", err)
	_, err = f1.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "from the UI"})
	ok(tu.front1, "append to u1's session", err)
	_, err = f1.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: "u1"})
	ok(tu.front1, "sessions.list user u1", err)

	// A reader reads its user's sessions and writes nothing.
	_, err = tu.a2.c.CreateSession(ctx, "s2", &memoryv1.CreateSessionRequest{UserId: "u2"})
	ok(tu.a2, "session create (user u2)", err)
	_, err = tu.front2.c.Context(ctx, "s2")
	ok(tu.front2, "context of u2's session (reader)", err)
	_, err = tu.front2.c.AppendMessages(ctx, "s2", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "x"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != 403 {
		t.Fatalf("reader append = %v, want 403", err)
	}

	// The admin writes app and project scopes and reaches any session and data.
	ops := tu.ops.c
	_, err = ops.Put(ctx, client.App("shop"), &memoryv1.PutEntryRequest{Key: "policy", Value: []byte("30 days")})
	ok(tu.ops, "app put", err)
	_, err = ops.Put(ctx, client.Project("p1"), &memoryv1.PutEntryRequest{Key: "goal", Value: []byte("ship")})
	ok(tu.ops, "project put", err)
	_, err = ops.Context(ctx, "s2")
	ok(tu.ops, "context of any session", err)
	_, _, err = ops.GetData(ctx, ref.GetId())
	ok(tu.ops, "data get (any)", err)
	_, err = ops.ListSessions(ctx, &memoryv1.ListSessionsRequest{})
	ok(tu.ops, "sessions.list (all)", err)
	if _, err := tu.ops.nc.Request("$SRV.PING.memory", nil, 2*time.Second); err != nil {
		t.Fatalf("ops: $SRV.PING: %v", err)
	}
}
