package node_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// eraseFixture is a node with sessions s1, s2 of user u1 and s3 of user
// u2, each holding marker words of its own in messages and entries.
type eraseFixture struct {
	n    *node.Node
	nc   *nats.Conn
	c    *client.Client
	js   jetstream.JetStream
	data string
	// partitioned: the log is in erasePartitions streams (the Go client's
	// direct watch reads the one stream MEM: not built for partitions).
	partitioned bool
}

func newEraseFixture(t *testing.T) *eraseFixture {
	t.Helper()
	return newEraseFixtureWith(t, nil)
}

// newEraseFixtureWith is newEraseFixture of a node configured by mutate
// too (nil: none).
func newEraseFixtureWith(t *testing.T, mutate func(*node.Config)) *eraseFixture {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.DataDir = data
		if mutate != nil {
			mutate(c)
		}
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	f := &eraseFixture{n: n, nc: nc, c: client.New(nc), js: js, data: data}
	ctx := context.Background()
	for _, s := range []struct{ id, user, marker string }{{"s1", "u1", "quokkaone"}, {"s2", "u1", "quokkatwo"}, {"s3", "u2", "quokkathree"}} {
		if _, err := f.c.CreateSession(ctx, s.id, &memoryv1.CreateSessionRequest{UserId: s.user, Project: "p1"}); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if _, err := f.c.AppendMessages(ctx, s.id,
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "my note about " + s.marker + " number " + string(rune('a'+i))},
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "noted " + s.marker}); err != nil {
				t.Fatal(err)
			}
		}
		// A large tool result: stored as large data the session owns.
		if _, err := f.c.AppendMessages(ctx, s.id,
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "call_1", Name: "fetch", Arguments: "{}"}}},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call_1", Content: strings.Repeat("blob of "+s.marker+" ", 12<<10)}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.c.Put(ctx, client.SessionScope(s.id), &memoryv1.PutEntryRequest{Key: "draft", Value: []byte("draft " + s.marker)}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.c.Put(ctx, client.User(s.user), &memoryv1.PutEntryRequest{Key: "pref-" + s.id, Value: []byte("likes pref" + s.id)}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// logHolds reports the subjects of the log's messages whose bytes hold
// marker (any stream message, read back from the server).
func (f *eraseFixture) logHolds(t *testing.T, marker string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if f.partitioned {
		return partitionsHold(t, ctx, f.js, marker)
	}
	st, err := f.js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // removed
		}
		if bytes.Contains(m.Data, []byte(marker)) {
			out = append(out, m.Subject)
		}
	}
	return out
}

// unreadable checks every read path of the API for session id and marker.
func (f *eraseFixture) unreadable(t *testing.T, id, user, marker, other string) {
	t.Helper()
	ctx := context.Background()
	c := f.c
	if _, err := c.Get(ctx, id); client.Code(err) != 404 {
		t.Errorf("get %s after erase: %v, want 404", id, err)
	}
	if _, err := c.Context(ctx, id); client.Code(err) != 404 {
		t.Errorf("context %s after erase: %v, want 404", id, err)
	}
	if _, err := c.Recall(ctx, id, nil); client.Code(err) != 404 {
		t.Errorf("recall %s after erase: %v, want 404", id, err)
	}
	if _, err := c.GetEntry(ctx, client.SessionScope(id), "draft", 0); client.Code(err) != 404 {
		t.Errorf("session scope entry of %s after erase: %v, want 404", id, err)
	}
	if h, err := c.History(ctx, client.SessionScope(id), "draft"); err == nil && len(h) > 0 {
		t.Errorf("session scope history of %s after erase: %d versions", id, len(h))
	}
	if other != "" {
		rep, err := c.Search(ctx, other, &memoryv1.SearchRequest{Query: marker, Scope: memoryv1.SearchScope_SEARCH_SCOPE_USER})
		if err != nil {
			t.Fatalf("search from %s: %v", other, err)
		}
		for _, h := range rep.GetHits() {
			if h.GetSessionId() == id {
				t.Errorf("search from %s finds erased %s: %v", other, id, h)
			}
		}
	}
	list, err := c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: user})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.GetSessions() {
		if s.GetSessionId() == id {
			t.Errorf("sessions.list still lists %s", id)
		}
	}
	if subs := f.logHolds(t, marker); len(subs) > 0 {
		t.Errorf("log messages still hold %q: %v", marker, subs)
	}
	// A watch from the start of the log never delivers the erased events.
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if !f.partitioned {
		w, err := c.Watch(wctx, events.SessionSubject(id), 1)
		if err != nil {
			t.Fatalf("watch %s: %v", id, err)
		}
		select {
		case ch, ok := <-w.Changes():
			if ok {
				t.Errorf("a watch of erased %s from sequence 1 delivered %v", id, ch)
			}
		case <-time.After(time.Second):
		}
	}
	// The same through the service's watch (what tenants use).
	fw, err := c.Follow(wctx, client.FollowSession(id), 1)
	if err != nil {
		t.Fatalf("follow %s: %v", id, err)
	}
	select {
	case ch, ok := <-fw.Changes():
		if ok {
			t.Errorf("the service watch of erased %s from sequence 1 delivered %v", id, ch)
		}
	case <-time.After(time.Second):
	}
}

// TestEraseSessionAndUser: erasing a session makes it unreadable on every
// read path and removes its messages from the log; erasing its user
// reaches the user's other sessions and scope and nothing of another user;
// replay verify passes on the log afterwards.
func TestEraseSessionAndUser(t *testing.T) {
	f := newEraseFixture(t)
	ctx := context.Background()
	if subs := f.logHolds(t, "quokkaone"); len(subs) == 0 {
		t.Fatal("the marker is not in the log before the erase (the check could not fail)")
	}
	rc, err := f.c.EraseSession(ctx, "s1", "user asked")
	if err != nil {
		t.Fatalf("erase s1: %v", err)
	}
	if rc.GetRemovalId() == "" || rc.GetMessages() == 0 || len(rc.GetSessions()) != 1 || len(rc.GetData()) != 1 {
		t.Fatalf("receipt %v", rc)
	}
	if _, _, err := f.c.GetData(ctx, rc.GetData()[0]); client.Code(err) != 404 {
		t.Errorf("the session's large data after the erase: %v, want 404", err)
	}
	f.unreadable(t, "s1", "u1", "quokkaone", "s2")
	// s2 and s3 are whole.
	for _, id := range []string{"s2", "s3"} {
		if ctxr, err := f.c.Context(ctx, id); err != nil || len(ctxr.GetMessages()) == 0 {
			t.Fatalf("context %s after erasing s1: %v", id, err)
		}
	}
	// A session erased is erased again (a retry) as not found.
	if _, err := f.c.EraseSession(ctx, "s1", ""); client.Code(err) != 404 {
		t.Errorf("second erase of s1: %v, want 404", err)
	}

	rc, err = f.c.EraseUser(ctx, "u1", "account closed")
	if err != nil {
		t.Fatalf("erase u1: %v", err)
	}
	if len(rc.GetSessions()) != 1 || rc.GetSessions()[0] != "s2" || len(rc.GetScopes()) != 1 {
		t.Fatalf("user receipt %v", rc)
	}
	f.unreadable(t, "s2", "u1", "quokkatwo", "s3")
	if _, err := f.c.GetEntry(ctx, client.User("u1"), "pref-s1", 0); client.Code(err) != 404 {
		t.Errorf("user:u1 entry after erase: %v, want 404", err)
	}
	for _, m := range []string{"quokkaone", "prefs1", "prefs2"} {
		if subs := f.logHolds(t, m); len(subs) > 0 {
			t.Errorf("log still holds u1's marker %q: %v", m, subs)
		}
	}
	if e, err := f.c.GetEntry(ctx, client.User("u2"), "pref-s3", 0); err != nil || !strings.Contains(string(e.GetValue()), "prefs3") {
		t.Errorf("u2's entry after erasing u1: %v %v", e, err)
	}
	// New writes to the user's scope start again from nothing.
	if _, err := f.c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: "fresh", Value: []byte("new")}); err != nil {
		t.Fatalf("put after erase: %v", err)
	}
	h, err := f.c.History(ctx, client.User("u1"), "pref-s1")
	if err == nil && len(h) > 0 {
		t.Errorf("history of an erased entry: %d versions", len(h))
	}

	// Rebuild and verify accept the erased log.
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := f.n.WaitProjected(sctx, f.c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	if err := f.n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{DataDir: f.data}}, &out); err != nil {
		t.Fatalf("replay verify after erasures: %v\n%s", err, out.String())
	}
}

// TestEraseEntryAndCopies: an entry erase removes every version of the key
// from every read path and from the log; a value published into a project
// and shown in another user's context is in that session's events only as
// a reference, and erasing its user removes it from the project and from
// the other context.
func TestEraseEntryAndCopies(t *testing.T) {
	f := newEraseFixture(t)
	ctx := context.Background()
	c := f.c
	for _, v := range []string{"vegan-first", "vegan-second"} {
		if _, err := c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: "diet", Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := c.EraseEntry(ctx, client.User("u1"), "diet", "wrong value")
	if err != nil {
		t.Fatalf("erase entry: %v", err)
	}
	if len(rc.GetEntries()) != 1 || rc.GetMessages() == 0 {
		t.Fatalf("receipt %v", rc)
	}
	if _, err := c.GetEntry(ctx, client.User("u1"), "diet", 0); client.Code(err) != 404 {
		t.Errorf("get after erase: %v, want 404", err)
	}
	if _, err := c.GetEntry(ctx, client.User("u1"), "diet", 1); client.Code(err) != 404 {
		t.Errorf("get version 1 after erase: %v, want 404", err)
	}
	if h, err := c.History(ctx, client.User("u1"), "diet"); err == nil && len(h) > 0 {
		t.Errorf("history after erase: %d versions", len(h))
	}
	if _, err := c.Rollback(ctx, client.User("u1"), &memoryv1.RollbackEntryRequest{Key: "diet", ToVersion: 1}); err == nil {
		t.Error("rollback to an erased version succeeded")
	}
	if hits, err := c.SearchEntries(ctx, client.User("u1"), &memoryv1.SearchEntriesRequest{Query: "vegan"}); err != nil || len(hits.GetHits()) != 0 {
		t.Errorf("search after erase: %v %v", hits, err)
	}
	for _, m := range []string{"vegan-first", "vegan-second"} {
		if subs := f.logHolds(t, m); len(subs) > 0 {
			t.Errorf("log still holds %q: %v", m, subs)
		}
	}
	// The scope's other entries are whole.
	if e, err := c.GetEntry(ctx, client.User("u1"), "pref-s1", 0); err != nil || string(e.GetValue()) != "likes prefs1" {
		t.Errorf("other entry after erasing diet: %v %v", e, err)
	}

	// u1 publishes into project p1; u2's session s3 (project p1) sees it.
	if _, err := c.Put(ctx, client.SessionScope("s1"), &memoryv1.PutEntryRequest{Key: "launch-plan", Value: []byte("zorblax rollout on friday")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, "s1", "launch-plan", "project"); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if _, err := c.AppendMessages(ctx, "s3", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "when is the zorblax rollout launch plan?"}); err != nil {
		t.Fatal(err)
	}
	shows := func(id, marker string) bool {
		cx, err := c.Context(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cx.GetMessages() {
			if strings.Contains(m.GetContent(), marker) {
				return true
			}
		}
		return false
	}
	if !shows("s3", "zorblax rollout on friday") {
		t.Fatal("the published value is not in s3's memory section (the check below could not fail)")
	}
	if subs := f.logHolds(t, "rollout on friday"); len(subs) != 2 {
		// the session scope put and the project copy; s3's events hold a reference only
		t.Errorf("log messages holding the value: %v, want the two entry writes", subs)
	}
	urc, err := c.EraseUser(ctx, "u1", "gdpr")
	if err != nil {
		t.Fatalf("erase u1: %v", err)
	}
	if len(urc.GetEntries()) != 1 {
		t.Errorf("user erase receipt %v: want the project copy among its entries", urc)
	}
	if hits, err := c.SearchEntries(ctx, client.Project("p1"), &memoryv1.SearchEntriesRequest{Query: "zorblax rollout"}); err != nil || len(hits.GetHits()) > 0 {
		t.Errorf("project search after erasing u1: %v %v", hits, err)
	}
	if shows("s3", "rollout on friday") {
		t.Error("s3's context still shows u1's published value after erasing u1")
	}
	if _, err := c.GetEntry(ctx, client.Project("p1"), "launch-plan", 0); client.Code(err) != 404 {
		t.Errorf("project copy after erasing u1: %v, want 404", err)
	}
	if subs := f.logHolds(t, "rollout on friday"); len(subs) > 0 {
		t.Errorf("log still holds u1's published value: %v", subs)
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := f.n.WaitProjected(sctx, f.c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	if err := f.n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{DataDir: f.data}}, &out); err != nil {
		t.Fatalf("replay verify after erasures: %v\n%s", err, out.String())
	}
}

// TestEraseResumedAfterCrash: a crash right after an erase recorded its
// LogRemoval (nothing purged yet) is finished when the node starts again,
// before it serves: the session is gone, its messages too, the removal is
// completed, and no second removal is recorded.
func TestEraseResumedAfterCrash(t *testing.T) {
	f := newEraseFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jl, err := events.OpenJetStreamLog(f.js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	subj := events.SessionSubject("s1")
	seqs, err := events.SubjectSeqs(ctx, jl, subj)
	if err != nil || len(seqs) == 0 {
		t.Fatalf("seqs of s1: %v %v", seqs, err)
	}
	// The erase request's plan, then the session's own removal: recorded,
	// nothing purged, no completion.
	plan := &memoryv1.LogRemoval{Id: "crashed1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:s1",
		Planned: []string{"session.s1", "session_scope.s1"}}
	codec := events.NewCodec()
	now := time.Now()
	if _, err := events.AppendRemoval(ctx, jl, codec, plan, now); err != nil {
		t.Fatal(err)
	}
	rm := &memoryv1.LogRemoval{Id: events.PlannedRemovalID("crashed1", "session.s1"), Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:s1",
		Subjects: []string{subj}, Removed: events.RemovalSpans(events.Spans(seqs)), Erased: []string{"session.s1"}, Messages: uint64(len(seqs))}
	if _, err := events.AppendRemoval(ctx, jl, codec, rm, now); err != nil {
		t.Fatal(err)
	}
	f.n.Kill() // the crash: nothing purged, no completion

	n2, nc2 := node.StartForTest(t, func(c *node.Config) { c.DataDir = f.data })
	c2 := client.New(nc2)
	if _, err := c2.Get(ctx, "s1"); client.Code(err) != 404 {
		t.Fatalf("s1 after the resumed erase: %v, want 404", err)
	}
	g := &eraseFixture{n: n2, nc: nc2, c: c2, data: f.data}
	if g.js, err = jetstream.New(nc2); err != nil {
		t.Fatal(err)
	}
	if subs := g.logHolds(t, "quokkaone"); len(subs) > 0 {
		t.Fatalf("log still holds s1's messages after the restart: %v", subs)
	}
	jl2, err := events.OpenJetStreamLog(g.js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	led, err := events.ReadLedger(ctx, jl2, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The plan, the session's removal and its session scope's: all completed.
	if len(led.Removals) != 3 || len(led.Pending()) != 0 {
		t.Fatalf("ledger after the restart: %d removals, %d pending", len(led.Removals), len(led.Pending()))
	}
	if _, err := c2.Context(ctx, "s2"); err != nil {
		t.Fatalf("s2 after the restart: %v", err)
	}
}

// TestEraseAgent: erasing an agent's memory removes its entries from get,
// history, list, search and the log; another agent's stay.
func TestEraseAgent(t *testing.T) {
	f := newEraseFixture(t)
	ctx := context.Background()
	for _, a := range []string{"ag1", "ag2"} {
		if _, err := f.c.Put(ctx, client.Agent(a), &memoryv1.PutEntryRequest{Key: "lesson", Value: []byte("the capybara lesson of " + a)}); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := f.c.EraseScope(ctx, client.Agent("ag1"), "retired agent")
	if err != nil || len(rc.GetScopes()) != 1 {
		t.Fatalf("erase agent ag1: %v %v", rc, err)
	}
	if _, err := f.c.GetEntry(ctx, client.Agent("ag1"), "lesson", 0); client.Code(err) != 404 {
		t.Errorf("ag1's entry after erase: %v, want 404", err)
	}
	if l, err := f.c.ListEntries(ctx, client.Agent("ag1"), &memoryv1.ListEntriesRequest{IncludeDeleted: true}); err != nil || len(l.GetEntries()) != 0 {
		t.Errorf("ag1's list after erase: %v %v", l, err)
	}
	if hits, err := f.c.SearchEntries(ctx, client.Agent("ag1"), &memoryv1.SearchEntriesRequest{Query: "capybara"}); err != nil || len(hits.GetHits()) != 0 {
		t.Errorf("ag1's search after erase: %v %v", hits, err)
	}
	if subs := f.logHolds(t, "lesson of ag1"); len(subs) > 0 {
		t.Errorf("log still holds ag1's entry: %v", subs)
	}
	if e, err := f.c.GetEntry(ctx, client.Agent("ag2"), "lesson", 0); err != nil || !strings.Contains(string(e.GetValue()), "ag2") {
		t.Errorf("ag2's entry after erasing ag1: %v %v", e, err)
	}
}

// TestEraseSessionTakesItsFacts: facts consolidation extracted from a
// session into its user's scope name the session, and erasing the session
// erases them; facts from another session stay.
func TestEraseSessionTakesItsFacts(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	for id, text := range map[string]string{"f1": "I'm allergic to peanuts.", "f2": "My daughter's name is Ana."} {
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "uf"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Consolidate(ctx, id, false); err != nil {
			t.Fatalf("consolidate %s: %v", id, err)
		}
	}
	facts := func() string {
		l, err := c.ListEntries(ctx, client.User("uf"), &memoryv1.ListEntriesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range l.GetEntries() {
			b.WriteString(e.GetKey() + "=" + string(e.GetValue()) + ";")
		}
		return b.String()
	}
	before := facts()
	if !strings.Contains(before, "peanut") || !strings.Contains(before, "Ana") {
		t.Fatalf("facts before the erase: %s (the check below could not fail)", before)
	}
	if _, err := c.EraseSession(ctx, "f1", "forget that conversation"); err != nil {
		t.Fatal(err)
	}
	after := facts()
	if strings.Contains(after, "peanut") || !strings.Contains(after, "Ana") {
		t.Fatalf("facts after erasing f1: %s, want Ana's and no peanuts", after)
	}
}

// TestEraseAgentSessionTakesItsEpisodes: a session with an agent and no
// user, consolidated, leaves an episode in agent:<id>; erasing the session
// erases the episode too (get, list, search), and another session's
// episode stays.
func TestEraseAgentSessionTakesItsEpisodes(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	for id, text := range map[string]string{
		"ep1": "I tried restarting the wombat router, but it didn't help.",
		"ep2": "I tried flushing the platypus cache and it worked.",
	} {
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{AgentId: "solo"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text}); err != nil {
			t.Fatal(err)
		}
		rep, err := c.Consolidate(ctx, id, false)
		if err != nil {
			t.Fatalf("consolidate %s: %v", id, err)
		}
		if len(rep.GetFacts()) != 1 || rep.GetFacts()[0].GetScope() != "agent:solo" {
			t.Fatalf("%s: facts %v, want one episode in agent:solo", id, rep.GetFacts())
		}
	}
	episodes := func() map[string]string {
		l, err := c.ListEntries(ctx, client.Agent("solo"), &memoryv1.ListEntriesRequest{Prefix: "episode/"})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, e := range l.GetEntries() {
			if !e.GetDeleted() {
				out[e.GetKey()] = string(e.GetValue())
			}
		}
		return out
	}
	var wombat string
	for k, v := range episodes() {
		if strings.Contains(v, "wombat") {
			wombat = k
		}
	}
	if wombat == "" {
		t.Fatalf("no wombat episode in agent:solo before the erase: %v (the check below could not fail)", episodes())
	}
	// An episode as consolidation wrote it before, naming its session in
	// the old key alone: erased with the session too.
	if _, err := c.Put(ctx, client.Agent("solo"), &memoryv1.PutEntryRequest{Key: "episode/old/wombat_gate", Value: []byte("I tried the wombat gate"),
		Metadata: map[string]string{"source_session": "ep1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EraseSession(ctx, "ep1", "forget that conversation"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntry(ctx, client.Agent("solo"), "episode/old/wombat_gate", 0); client.Code(err) != 404 {
		t.Errorf("the erased session's episode under the old key: %v, want 404", err)
	}
	if _, err := c.GetEntry(ctx, client.Agent("solo"), wombat, 0); client.Code(err) != 404 {
		t.Errorf("the erased session's episode %s: %v, want 404", wombat, err)
	}
	after := episodes()
	if _, ok := after[wombat]; ok || len(after) != 1 {
		t.Errorf("episodes after erasing ep1: %v, want the platypus one alone", after)
	}
	if hits, err := c.SearchEntries(ctx, client.Agent("solo"), &memoryv1.SearchEntriesRequest{Query: "wombat router"}); err != nil || len(hits.GetHits()) != 0 {
		t.Errorf("search for the erased episode: %v %v", hits, err)
	}
	if hits, err := c.SearchEntries(ctx, client.Agent("solo"), &memoryv1.SearchEntriesRequest{Query: "platypus cache"}); err != nil || len(hits.GetHits()) != 1 {
		t.Errorf("search for the other session's episode: %v %v", hits, err)
	}
	// Nothing of it in the log, the removal ledger included: the episode's
	// key is made of the user's words, and the plan names it by digest.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if subs := (&eraseFixture{js: js}).logHolds(t, "wombat"); len(subs) > 0 {
		t.Errorf("log messages still hold the erased episode's words: %v", subs)
	}
}

// TestEraseEntryNotThere: an entry erase of a key the scope does not hold
// answers 404 and leaves no removal pending (a pending plan would be
// resumed, and fail, every 30 s for ever).
func TestEraseEntryNotThere(t *testing.T) {
	f := newEraseFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := f.c.EraseEntry(ctx, client.User("u1"), "never-written", "typo"); client.Code(err) != 404 {
		t.Fatalf("erase of a key not there: %v, want 404", err)
	}
	jl, err := events.OpenJetStreamLog(f.js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	led, err := events.ReadLedger(ctx, jl, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range led.Pending() {
		t.Errorf("removal %s (%s) pending after the 404", r.GetId(), r.GetTarget())
	}
}
