package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// eventually polls cond every 20 ms until it holds or 10 s pass (the
// retention work runs beside the request: timers and the sweep).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after 10 s", what, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTerminateEndsSessionScope: TERMINATE ends the session:<id> scope's
// live entries (END tombstones the scope's actor stores) before it
// answers; get, list and search no longer find them; other scopes and
// other sessions' scopes keep theirs. A retried terminate is a no-op.
func TestTerminateEndsSessionScope(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	for _, id := range []string{"s1", "s2"} {
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"draft", "plan"} {
			if _, err := c.Put(ctx, client.SessionScope(id), &memoryv1.PutEntryRequest{Key: k, Value: []byte("zanzibar " + k + " of " + id), ContentType: "text/plain"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: "pref", Value: []byte("zanzibar tea")}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done")
	if err != nil || rep.GetStatus() != memoryv1.SessionStatus_SESSION_STATUS_TERMINATED {
		t.Fatalf("terminate: %v %v", rep, err)
	}
	for _, k := range []string{"draft", "plan"} {
		if _, err := c.GetEntry(ctx, client.SessionScope("s1"), k, 0); client.Code(err) != 404 {
			t.Errorf("get %s after terminate: %v, want 404", k, err)
		}
		h, err := c.History(ctx, client.SessionScope("s1"), k)
		if err != nil || len(h) != 2 || h[len(h)-1].GetChange() != memoryv1.ChangeKind_CHANGE_KIND_END || !h[len(h)-1].GetDeleted() {
			t.Errorf("history of %s: %v %v, want PUT then END", k, h, err)
		}
	}
	l, err := c.ListEntries(ctx, client.SessionScope("s1"), &memoryv1.ListEntriesRequest{})
	if err != nil || len(l.GetEntries()) != 0 {
		t.Errorf("list after terminate: %v %v", l, err)
	}
	eventually(t, "search of the ended scope", func() (bool, string) {
		r, err := c.SearchEntries(ctx, client.SessionScope("s1"), &memoryv1.SearchEntriesRequest{Query: "zanzibar"})
		return err == nil && len(r.GetHits()) == 0, r.String()
	})
	if l, err := c.ListEntries(ctx, client.SessionScope("s2"), &memoryv1.ListEntriesRequest{}); err != nil || len(l.GetEntries()) != 2 {
		t.Errorf("another session's scope: %v %v", l, err)
	}
	if e, err := c.GetEntry(ctx, client.User("u1"), "pref", 0); err != nil || e.GetDeleted() {
		t.Errorf("user scope: %v %v", e, err)
	}
	// Terminating again is refused (409) and stores nothing more.
	if _, err := c.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "again"); client.Code(err) != 409 {
		t.Errorf("second terminate: %v", err)
	}
	if h, _ := c.History(ctx, client.SessionScope("s1"), "draft"); len(h) != 2 {
		t.Errorf("history after a second terminate: %d versions", len(h))
	}
}
