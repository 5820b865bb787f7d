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

// TestArchiveTerminatedSessions: with --archive-after, the node archives a
// session terminated longer ago than the bound (a status change its actor
// stores), and leaves live sessions and recently terminated ones alone.
func TestArchiveTerminatedSessions(t *testing.T) {
	const after = 300 * time.Millisecond
	_, nc := node.StartForTest(t, func(c *node.Config) { c.ArchiveAfter = after })
	c := client.New(nc)
	ctx := context.Background()
	for _, id := range []string{"old", "live"} {
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, client.SessionScope("old"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	terminated := time.Now()
	if _, err := c.SetStatus(ctx, "old", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
		t.Fatal(err)
	}
	var info *memoryv1.SessionInfo
	eventually(t, "archive of the terminated session", func() (bool, string) {
		var err error
		info, err = c.Get(ctx, "old")
		return err == nil && info.GetStatus() == memoryv1.SessionStatus_SESSION_STATUS_ARCHIVED, info.GetStatus().String()
	})
	// Never before the bound: the archive's batch is at least after past
	// the terminate.
	if at := time.Unix(0, info.GetUpdatedUnixNano()); at.Sub(terminated) < after {
		t.Errorf("archived %s after the terminate, bound %s", at.Sub(terminated), after)
	}
	if live, err := c.Get(ctx, "live"); err != nil || live.GetStatus() == memoryv1.SessionStatus_SESSION_STATUS_ARCHIVED {
		t.Errorf("live session: %v %v", live.GetStatus(), err)
	}
	// ARCHIVED is read-only, and its session scope stays ended.
	if _, err := c.AppendMessages(ctx, "old", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "hi"}); client.Code(err) != 409 {
		t.Errorf("append to an archived session: %v", err)
	}
	if h, err := c.History(ctx, client.SessionScope("old"), "k"); err != nil || len(h) != 2 {
		t.Errorf("session scope history after archive: %v %v", h, err)
	}
}

// TestEpisodicTTLExpiresByDefault: with --episodic-ttl, an episodic entry
// put without a ttl expires (an EXPIRE tombstone the scope's actor stores
// on its timer); semantic entries do not; a scope's episodic_ttl_seconds
// overrides the default, -1 turning expiry off.
func TestEpisodicTTLExpiresByDefault(t *testing.T) {
	const ttl = time.Second
	_, nc := node.StartForTest(t, func(c *node.Config) { c.Actors.EpisodicTTL = ttl })
	c := client.New(nc)
	ctx := context.Background()
	ep := memoryv1.MemoryType_MEMORY_TYPE_EPISODIC
	put := func(scope client.Scope, key string, mt memoryv1.MemoryType) *memoryv1.Entry {
		t.Helper()
		r, err := c.Put(ctx, scope, &memoryv1.PutEntryRequest{Key: key, Value: []byte("v"), MemoryType: mt})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetEntry()
	}
	e := put(client.User("u1"), "met", ep)
	if d := e.GetExpiresUnixNano() - e.GetUpdatedUnixNano(); d != int64(ttl) {
		t.Fatalf("episodic entry expires %d ns after its write, want %d", d, int64(ttl))
	}
	if e := put(client.User("u1"), "fact", memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC); e.GetExpiresUnixNano() != 0 {
		t.Fatalf("semantic entry expires at %d", e.GetExpiresUnixNano())
	}
	if _, err := c.Configure(ctx, client.Project("p1"), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{EpisodicTtlSeconds: -1}}); err != nil {
		t.Fatal(err)
	}
	if e := put(client.Project("p1"), "kept", ep); e.GetExpiresUnixNano() != 0 {
		t.Fatalf("episodic entry in a scope with episodic_ttl_seconds -1 expires at %d", e.GetExpiresUnixNano())
	}
	// The projection takes -1 too (the client's search waits for its last
	// write to be projected).
	if r, err := c.SearchEntries(ctx, client.Project("p1"), &memoryv1.SearchEntriesRequest{Query: "kept"}); err != nil || len(r.GetHits()) != 1 {
		t.Fatalf("search in the scope with episodic_ttl_seconds -1: %v %v", r, err)
	}
	if _, err := c.Configure(ctx, client.Project("p2"), &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{EpisodicTtlSeconds: 3600}}); err != nil {
		t.Fatal(err)
	}
	if e := put(client.Project("p2"), "hour", ep); e.GetExpiresUnixNano()-e.GetUpdatedUnixNano() != int64(time.Hour) {
		t.Fatalf("scope ttl 3600: expires %d ns after the write", e.GetExpiresUnixNano()-e.GetUpdatedUnixNano())
	}
	// The scope's actor stores the expiry itself, without a request.
	eventually(t, "EXPIRE tombstone", func() (bool, string) {
		h, err := c.History(ctx, client.User("u1"), "met")
		if err != nil || len(h) == 0 {
			return false, "no history"
		}
		return h[len(h)-1].GetChange() == memoryv1.ChangeKind_CHANGE_KIND_EXPIRE, h[len(h)-1].GetChange().String()
	})
	if _, err := c.GetEntry(ctx, client.User("u1"), "met", 0); client.Code(err) != 404 {
		t.Errorf("get of the expired entry: %v", err)
	}
	if e, err := c.GetEntry(ctx, client.User("u1"), "fact", 0); err != nil || e.GetDeleted() {
		t.Errorf("semantic entry: %v %v", e, err)
	}
}
