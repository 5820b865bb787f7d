package client_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestScopeSubjects(t *testing.T) {
	cases := []struct {
		scope          client.Scope
		subject, watch string
		name           string
	}{
		{client.Agent("a1"), "mem.v1.agent.a1.put", "mem.ev.agent.a1", "agent:a1"},
		{client.Global(), "mem.v1.scope.global.global.put", "mem.ev.global.global", "global"},
		{client.Workflow("w1"), "mem.v1.scope.workflow.w1.put", "mem.ev.workflow.w1", "workflow:w1"},
		{client.Swarm("s1"), "mem.v1.scope.swarm.s1.put", "mem.ev.swarm.s1", "swarm:s1"},
		{client.Debate("d1"), "mem.v1.scope.debate.d1.put", "mem.ev.debate.d1", "debate:d1"},
		{client.SessionScope("x"), "mem.v1.scope.session.x.put", "mem.ev.session_scope.x", "session:x"},
		{client.User("u"), "mem.v1.scope.user.u.put", "mem.ev.user.u", "user:u"},
		{client.App("crm"), "mem.v1.scope.app.crm.put", "mem.ev.app.crm", "app:crm"},
		{client.Project("p"), "mem.v1.scope.project.p.put", "mem.ev.project.p", "project:p"},
	}
	for _, c := range cases {
		if got := c.scope.Subject("put"); got != c.subject {
			t.Errorf("%v.Subject(put) = %q, want %q", c.scope, got, c.subject)
		}
		if got := c.scope.WatchFilter(); got != c.watch {
			t.Errorf("%v.WatchFilter() = %q, want %q", c.scope, got, c.watch)
		}
		if got := c.scope.String(); got != c.name {
			t.Errorf("%#v.String() = %q, want %q", c.scope, got, c.name)
		}
	}
}

// TestScopeMethods runs every typed method once against an embedded node
// and checks the client records its writes' sequences.
func TestScopeMethods(t *testing.T) {
	nc := startForTest(t)
	c := client.New(nc)
	ctx := context.Background()
	sc := client.Workflow("w1")

	put, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: "plan", Value: []byte("step one")})
	if err != nil {
		t.Fatal(err)
	}
	if put.GetResult().GetSeq() == 0 || c.LastWriteSeq() != put.GetResult().GetSeq() {
		t.Fatalf("put seq %d, client last write %d", put.GetResult().GetSeq(), c.LastWriteSeq())
	}
	if put.GetEntry().GetVersion() != 1 {
		t.Fatalf("put version %d, want 1", put.GetEntry().GetVersion())
	}
	two := int64(1)
	if _, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: "plan", Value: []byte("step two"), ExpectedVersion: &two}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: "plan", Value: []byte("lost"), ExpectedVersion: &two}); client.Code(err) != 409 {
		t.Fatalf("stale CAS: %v, want 409", err)
	}
	e, err := c.GetEntry(ctx, sc, "plan", 0)
	if err != nil || string(e.GetValue()) != "step two" {
		t.Fatalf("get: %v %q", err, e.GetValue())
	}
	if e, err := c.GetEntry(ctx, sc, "plan", 1); err != nil || string(e.GetValue()) != "step one" {
		t.Fatalf("get v1: %v %q", err, e.GetValue())
	}
	if _, err := c.Rollback(ctx, sc, &memoryv1.RollbackEntryRequest{Key: "plan", ToVersion: 1}); err != nil {
		t.Fatal(err)
	}
	hist, err := c.History(ctx, sc, "plan")
	if err != nil || len(hist) != 3 || string(hist[2].GetValue()) != "step one" || hist[2].GetRestoredFrom() != 1 {
		t.Fatalf("history after rollback: %v %v", err, hist)
	}
	list, err := c.ListEntries(ctx, sc, nil)
	if err != nil || len(list.GetEntries()) != 1 {
		t.Fatalf("list: %v %v", err, list)
	}
	if _, err := c.Configure(ctx, sc, &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{MaxEntries: 10}}); err != nil {
		t.Fatal(err)
	}
	del, err := c.DeleteEntry(ctx, sc, &memoryv1.DeleteEntryRequest{Key: "plan"})
	if err != nil || !del.GetEntry().GetDeleted() {
		t.Fatalf("delete: %v %v", err, del)
	}
	if _, err := c.GetEntry(ctx, sc, "plan", 0); client.Code(err) != 404 {
		t.Fatalf("get after delete: %v, want 404", err)
	}
	if c.LastWriteSeq() != del.GetResult().GetSeq() {
		t.Fatalf("last write %d, delete seq %d", c.LastWriteSeq(), del.GetResult().GetSeq())
	}

	// Resolve and publish need a session.
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, client.SessionScope("s1"), &memoryv1.PutEntryRequest{Key: "tone", Value: []byte("terse")}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Resolve(ctx, "s1", "tone")
	if err != nil || !res.GetFound() || res.GetScope() != "session:s1" {
		t.Fatalf("resolve: %v %v", err, res)
	}
	if _, err := c.Publish(ctx, "s1", "tone", "user"); err != nil {
		t.Fatal(err)
	}
	if e, err := c.GetEntry(ctx, client.User("u1"), "tone", 0); err != nil || string(e.GetValue()) != "terse" {
		t.Fatalf("published entry: %v %v", err, e)
	}

	data := bytes.Repeat([]byte("large "), 1000)
	ref, err := c.PutData(ctx, data, "text/plain", map[string]string{"k": "v"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ref.GetSize() != uint64(len(data)) || ref.GetMetadata()["k"] != "v" {
		t.Fatalf("ref %v", ref)
	}
	got, back, err := c.GetData(ctx, ref.GetId())
	if err != nil || !bytes.Equal(back, data) || got.GetSha256() != ref.GetSha256() {
		t.Fatalf("get data: %v (%d bytes)", err, len(back))
	}
}
