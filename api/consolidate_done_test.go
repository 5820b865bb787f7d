package api_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestConsolidationDone: a terminate's reply says where the end of the
// background consolidation will show (the marker written last, and the
// watch that reports it); the marker appears with every fact written
// before it. An on-demand run's reply says it finished, with the marker,
// the digest and how much it wrote; a repeat writes nothing; a dry run is
// not done.
func TestConsolidationDone(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	converse(t, c, "s1", "u1", "I'm allergic to peanuts.", "Noted.", "We had a lovely picnic by the river on Saturday.", "Nice!")
	st, err := c.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done")
	if err != nil {
		t.Fatal(err)
	}
	mk := st.GetConsolidation()
	if mk.GetScope() != "user:u1" || mk.GetKey() != "consolidated/s1" || mk.GetWatch() != "mem.v1.scope.user.u1.watch" || !mk.GetQueued() {
		t.Fatalf("terminate reply: %v", st)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := c.AwaitConsolidation(wctx, mk, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The marker is written last: the facts are there once it is.
	if _, err := c.GetEntry(ctx, client.User("u1"), "fact/user/allergy/peanuts", 0); err != nil {
		t.Fatalf("the marker came before the fact: %v", err)
	}
	if _, err := c.GetEntry(ctx, client.User("u1"), "episode/session/s1", 0); err != nil {
		t.Fatalf("the marker came before the digest: %v", err)
	}
	// A repeat, on demand: done, nothing new.
	rep, err := c.Consolidate(ctx, "s1", false)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.GetDone() || rep.GetWritten() != 0 || rep.GetMarker().GetKey() != "consolidated/s1" || rep.GetDigest().GetOutcome() != "duplicate" {
		t.Fatalf("repeat: done %v written %d marker %v digest %v", rep.GetDone(), rep.GetWritten(), rep.GetMarker(), rep.GetDigest())
	}
	// A first run on demand reports what it wrote.
	converse(t, c, "s2", "u1", "I've taken up pottery.", "Fun!")
	rep, err = c.Consolidate(ctx, "s2", false)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.GetDone() || rep.GetWritten() < 2 || rep.GetMarker().GetScope() != "user:u1" || len(rep.GetFacts()) != 1 {
		t.Fatalf("on demand: done %v written %d marker %v facts %v", rep.GetDone(), rep.GetWritten(), rep.GetMarker(), rep.GetFacts())
	}
	if _, err := c.GetEntry(ctx, client.User("u1"), "consolidated/s2", 0); err != nil {
		t.Fatalf("done without its marker: %v", err)
	}
	dry, err := c.Consolidate(ctx, "s2", true)
	if err != nil || dry.GetDone() || dry.GetMarker() != nil {
		t.Fatalf("dry run: %v %v", err, dry)
	}
}

// TestConsolidationSaidTime: imported history keeps the time it was said;
// relative dates resolve against it, every entry records it, and every
// entry names its source session with agentmem.source_session (the plain
// source_session key is no longer written), with or without a user.
func TestConsolidationSaidTime(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	said := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC).UnixNano()
	for _, s := range []struct{ id, user string }{{"s1", "u1"}, {"s2", ""}} {
		if _, err := c.CreateSession(ctx, s.id, &memoryv1.CreateSessionRequest{UserId: s.user, AgentId: "helper", SystemPrompt: "You help."}); err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"I joined a running club yesterday.", "I tried restarting the router, but it didn't help."} {
			if _, err := c.AppendMessages(ctx, s.id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text, SaidUnixNano: said}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Consolidate(ctx, s.id, false); err != nil {
			t.Fatal(err)
		}
	}
	e, err := c.GetEntry(ctx, client.User("u1"), "fact/user/joined/running_club", 0)
	if err != nil {
		t.Fatal(err)
	}
	md := e.GetMetadata()
	if md["agentmem.date"] != "2023-05-07" || md["agentmem.said_unix_nano"] != strconv.FormatInt(said, 10) ||
		!strings.Contains(string(e.GetValue()), "on 2023-05-07 (said 2023-05-08)") {
		t.Fatalf("a dated fact: %q %v", e.GetValue(), md)
	}
	for _, where := range []struct {
		scope   client.Scope
		session string
		keys    []string
	}{
		{client.User("u1"), "s1", []string{"fact/user/joined/running_club", "consolidated/s1"}},
		{client.Agent("helper"), "s1", []string{"episode/user/tried/restarting_the_router"}},
		{client.Agent("helper"), "s2", []string{"episode/session/s2", "consolidated/s2"}},
	} {
		for _, key := range where.keys {
			e, err := c.GetEntry(ctx, where.scope, key, 0)
			if err != nil {
				t.Fatalf("%s %s: %v", where.scope.Subject("get"), key, err)
			}
			md := e.GetMetadata()
			if md["agentmem.source_session"] != where.session || md["source_session"] != "" {
				t.Errorf("%s: source keys %v", key, md)
			}
			if where.session == "s1" && md["agentmem.source_user"] != "u1" {
				t.Errorf("%s: no source user: %v", key, md)
			}
		}
	}
	// The session without a user keeps its digest in the agent's scope,
	// dated by when it was said.
	d, err := c.GetEntry(ctx, client.Agent("helper"), "episode/session/s2", 0)
	if err != nil || !strings.HasPrefix(string(d.GetValue()), "On 2023-05-08 the user said:") || d.GetMetadata()["agentmem.date"] != "2023-05-08" {
		t.Fatalf("digest %v %v", err, d)
	}
}
