package consolidation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var said = time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC).UnixNano()

func newTest(t *testing.T) (*Consolidator, *memScopes, *memSessions) {
	t.Helper()
	scopes, sessions := newMemScopes(), &memSessions{}
	c, err := New(DefaultConfig(), scopes, sessions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, scopes, sessions
}

// TestRunOrderAndRepeat: a run writes the facts, then the digest, then the
// marker last; its reply says it is done and what it wrote; a repeat
// writes nothing.
func TestRunOrderAndRepeat(t *testing.T) {
	c, scopes, sessions := newTest(t)
	sessions.add("s1", "u1", "helper", said,
		"I'm allergic to peanuts.", "Noted.",
		"My sister drove up from Leeds on Saturday to see us.", "Lovely!",
		"I tried restarting the router, but it didn't help.", "Sorry.")
	rep, err := c.Consolidate(context.Background(), "s1", false)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(scopes.writesOf(), "\n")
	want := strings.Join([]string{"user:u1 fact/user/allergy/peanuts", "agent:helper episode/user/tried/restarting_the_router",
		"user:u1 episode/session/s1", "user:u1 consolidated/s1"}, "\n")
	if got != want {
		t.Fatalf("writes\n%s\nwant\n%s", got, want)
	}
	if !rep.GetDone() || rep.GetWritten() != 4 || rep.GetMarker().GetKey() != "consolidated/s1" || rep.GetMarker().GetScope() != "user:u1" ||
		rep.GetDigest().GetOutcome() != "written" || len(rep.GetFacts()) != 2 {
		t.Fatalf("reply %v", rep)
	}
	rep, err = c.Consolidate(context.Background(), "s1", false)
	if err != nil {
		t.Fatal(err)
	}
	if w := scopes.writesOf(); len(w) != 0 || rep.GetWritten() != 0 || !rep.GetDone() {
		t.Fatalf("a repeat wrote %v (written %d)", w, rep.GetWritten())
	}
	for _, f := range rep.GetFacts() {
		if f.GetOutcome() != "duplicate" && f.GetOutcome() != "unchanged" {
			t.Errorf("repeat: %s %s", f.GetKey(), f.GetOutcome())
		}
	}
	done, err := c.Consolidated(context.Background(), &memoryv1.SessionInfo{SessionId: "s1", UserId: "u1"})
	if err != nil || !done {
		t.Fatalf("consolidated: %v %v", done, err)
	}
}

// TestSourceKeys: every entry a run writes names its session with
// agentmem.source_session (and its user, when it has one), never with the
// plain source_session key, and records when it was said; facts also the
// date they name.
func TestSourceKeys(t *testing.T) {
	c, scopes, sessions := newTest(t)
	sessions.add("s1", "u1", "helper", said, "I joined a running club yesterday.", "Nice.", "I tried restarting the router, but it didn't help.", "Hm.")
	sessions.add("s2", "", "helper", said, "I joined a running club yesterday.", "Nice.", "I tried restarting the router, but it didn't help.", "Hm.")
	for _, id := range []string{"s1", "s2"} {
		if _, err := c.Consolidate(context.Background(), id, false); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for k, vs := range scopes.entries {
		for _, e := range vs {
			md := e.GetMetadata()
			session := md[SourceSessionKey]
			if session == "" || md[LegacySourceSessionKey] != "" {
				t.Errorf("%s: source keys %v", k, md)
			}
			if session == "s1" && md[SourceUserKey] != "u1" {
				t.Errorf("%s: no source user %v", k, md)
			}
			if md[SaidKey] == "" {
				t.Errorf("%s: no said time %v", k, md)
			}
			n++
		}
	}
	if n < 6 {
		t.Fatalf("%d entries written", n)
	}
	e, err := scopes.Get(context.Background(), Scope{"user", "u1"}, "fact/user/joined/running_club")
	if err != nil {
		t.Fatal(err)
	}
	if md := e.GetMetadata(); md[DateKey] != "2023-05-07" || md[SaidKey] == "" || !strings.Contains(string(e.GetValue()), "(said 2023-05-08)") {
		t.Fatalf("dated fact %q %v", e.GetValue(), md)
	}
	// A session without a user: its facts are skipped, its episode, digest
	// and marker go to the agent's scope.
	if _, err := scopes.Get(context.Background(), Scope{"agent", "helper"}, "consolidated/s2"); err != nil {
		t.Fatalf("marker of a session without a user: %v", err)
	}
}

// TestConflictRetried: a write that finds its key moved reads it again
// and decides once more.
func TestConflictRetried(t *testing.T) {
	c, scopes, sessions := newTest(t)
	sessions.add("s1", "u1", "", said, "I live in Oslo.", "Cool.")
	scopes.conflictOnce = "fact/user/home_city"
	rep, err := c.Consolidate(context.Background(), "s1", false)
	if err != nil || rep.GetFacts()[0].GetOutcome() != "written" {
		t.Fatalf("%v %v", err, rep)
	}
}

// TestBehind: a read model behind the session is ErrBehind (nothing
// written).
func TestBehind(t *testing.T) {
	c, scopes, sessions := newTest(t)
	sessions.add("s1", "u1", "", said, "I live in Oslo.", "Cool.")
	sessions.behind = context.DeadlineExceeded
	if _, err := c.Consolidate(context.Background(), "s1", false); !errors.Is(err, ErrBehind) {
		t.Fatalf("err %v, want ErrBehind", err)
	}
	if w := scopes.writesOf(); len(w) != 0 {
		t.Fatalf("wrote %v", w)
	}
	if _, err := c.Consolidate(context.Background(), "nope", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing session: %v", err)
	}
}

// TestLaterResumeClose: Later runs in the background (its end is the
// marker); Resume consolidates the terminated sessions without a marker;
// after Close nothing is queued and no goroutine is left (TestMain).
func TestLaterResumeClose(t *testing.T) {
	c, scopes, sessions := newTest(t)
	sessions.add("s1", "u1", "", said, "I live in Oslo.", "Cool.")
	sessions.add("s2", "u2", "", said, "I live in Lima.", "Cool.")
	sessions.sessions["s2"].Status = memoryv1.SessionStatus_SESSION_STATUS_TERMINATED
	sessions.sessions["s2"].UpdatedUnixNano = time.Now().UnixNano()
	if !c.Later("s1", false) {
		t.Fatal("not queued")
	}
	c.Resume(0)
	deadline := time.Now().Add(10 * time.Second)
	for _, m := range []struct{ scope Scope }{{Scope{"user", "u1"}}, {Scope{"user", "u2"}}} {
		for {
			if l, _, _ := scopes.List(context.Background(), m.scope, MarkerPrefix, ""); len(l) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no marker", m.scope)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	c.Close()
	c.Close() // idempotent
	if c.Later("s1", false) {
		t.Fatal("queued after Close")
	}
}

// TestMarker: where a session's end shows.
func TestMarker(t *testing.T) {
	for _, c := range []struct {
		info  *memoryv1.SessionInfo
		scope string
		watch string
	}{
		{&memoryv1.SessionInfo{SessionId: "s1", UserId: "u1", AgentId: "a1"}, "user:u1", "mem.v1.scope.user.u1.watch"},
		{&memoryv1.SessionInfo{SessionId: "s1", AgentId: "a1"}, "agent:a1", "mem.v1.agent.a1.watch"},
	} {
		m := Marker(c.info)
		if m.GetScope() != c.scope || m.GetWatch() != c.watch || m.GetKey() != "consolidated/s1" {
			t.Errorf("%v: %v", c.info, m)
		}
	}
	if Marker(&memoryv1.SessionInfo{SessionId: "s1"}) != nil {
		t.Error("a marker for a session without a scope")
	}
}
