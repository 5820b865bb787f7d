package actors

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// An append with Later is answered at once; the session then holds a
// context read until the Assemble lands, and the read shows its sections.
// An Assemble searched for another key is answered NeedCandidates, and one
// for a message no longer awaited is dropped.
func TestAppendLaterHoldsUntilAssembled(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	h.must(t, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"})
	later := &Later{}
	if _, err := h.call(t, "s1", &Append{Request: &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("what is my badge colour?")}}, Later: later}); err != nil {
		t.Fatal(err)
	}
	if later.MessageID == "" || !later.Key.Memory {
		t.Fatalf("Later not filled: %+v", later)
	}
	read := make(chan *memoryv1.ContextReply, 1)
	if err := h.dir.Dispatch("s1", nil, &memoryv1.ContextRequest{}, func(m proto.Message, err error) {
		cx, _ := m.(*memoryv1.ContextReply)
		read <- cx
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case cx := <-read:
		t.Fatalf("the context was served before its sections came: %v", cx)
	case <-time.After(200 * time.Millisecond):
	}
	stale := later.Key
	stale.User = "u0"
	var need *NeedCandidates
	if _, err := h.call(t, "s1", &Assemble{MessageID: later.MessageID, Key: stale}); !errors.As(err, &need) || need.Key != later.Key {
		t.Fatalf("assemble for another key: %v, want NeedCandidates with the session's", err)
	}
	c := &segmented.Candidates{Memory: []*memoryv1.MemoryItem{{Scope: "user:u1", Key: "badge", Version: 1, Tier: segmented.TierUser, Text: "badge colour is teal"}}}
	if _, err := h.call(t, "s1", &Assemble{MessageID: later.MessageID, Key: later.Key, Candidates: c}); err != nil {
		t.Fatal(err)
	}
	select {
	case cx := <-read:
		var mem bool
		for _, m := range cx.GetMessages() {
			mem = mem || bytes.Equal(m.GetMemory().GetKeySha256(), segmented.KeySum("badge"))
		}
		if !mem {
			t.Fatalf("the held context lacks the sections decided for it: %v", cx)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held context read was never served")
	}
	v := h.must(t, "s1", &memoryv1.GetSessionRequest{}).(*memoryv1.GetSessionReply).GetSession().GetVersion()
	if _, err := h.call(t, "s1", &Assemble{MessageID: later.MessageID, Key: later.Key, Candidates: &segmented.Candidates{}}); err != nil {
		t.Fatal(err)
	}
	if v2 := h.must(t, "s1", &memoryv1.GetSessionRequest{}).(*memoryv1.GetSessionReply).GetSession().GetVersion(); v2 != v {
		t.Fatalf("an Assemble no longer awaited stored something: version %d -> %d", v, v2)
	}
}

// Sections that never come: the held requests are served after the
// assembly wait, in order, and it is counted.
func TestAppendLaterGivesUp(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, func(c *Config) { c.AssemblyWait = 300 * time.Millisecond })
	h.must(t, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"})
	later := &Later{}
	if _, err := h.call(t, "s1", &Append{Request: &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("hello")}}, Later: later}); err != nil || later.MessageID == "" {
		t.Fatalf("append: %v %+v", err, later)
	}
	t0 := time.Now()
	done := make(chan string, 2)
	for _, text := range []string{"first", "second"} {
		if err := h.dir.Dispatch("s1", nil, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT, Content: text}}}, func(_ proto.Message, err error) {
			if err != nil {
				text += ": " + err.Error()
			}
			done <- text
		}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := <-done, <-done; a != "first" || b != "second" {
		t.Fatalf("held requests served as %q, %q", a, b)
	}
	if d := time.Since(t0); d < 250*time.Millisecond {
		t.Fatalf("held requests served after %s, before the assembly wait", d)
	}
	cx := h.must(t, "s1", &memoryv1.ContextRequest{}).(*memoryv1.ContextReply)
	if n := len(cx.GetMessages()); n != 3 || !strings.Contains(cx.GetMessages()[2].GetContent(), "second") {
		t.Fatalf("context after giving up: %v", cx.GetMessages())
	}
}

// Sections that come after the session's partition was handed over (the
// node is leaving: Deps.Serves says another node serves it now) are
// dropped, not stored: the new owner serves the session, and a leaving
// node's drain must not wait on the log for them. The held requests are
// served at once, without them.
func TestAssembleDroppedAfterHandOver(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	var handedOver atomic.Bool
	h := newHarnessDeps(t, nc, events.DefaultJetStreamConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)),
		nil, func(d *Deps) { d.Serves = func(string) bool { return !handedOver.Load() } })
	h.must(t, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"})
	later := &Later{}
	m, err := h.call(t, "s1", &Append{Request: &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("what is my badge colour?")}}, Later: later})
	if err != nil || later.MessageID == "" {
		t.Fatalf("append: %v %+v", err, later)
	}
	appended := m.(*memoryv1.AppendReply).GetResult().GetVersion()
	read := make(chan *memoryv1.ContextReply, 1)
	if err := h.dir.Dispatch("s1", nil, &memoryv1.ContextRequest{}, func(m proto.Message, err error) {
		cx, _ := m.(*memoryv1.ContextReply)
		read <- cx
	}); err != nil {
		t.Fatal(err)
	}
	handedOver.Store(true)
	c := &segmented.Candidates{Memory: []*memoryv1.MemoryItem{{Scope: "user:u1", Key: "badge", Version: 1, Tier: segmented.TierUser, Text: "badge colour is teal"}}}
	t0 := time.Now()
	if _, err := h.call(t, "s1", &Assemble{MessageID: later.MessageID, Key: later.Key, Candidates: c}); err != nil {
		t.Fatal(err)
	}
	select {
	case cx := <-read:
		for _, m := range cx.GetMessages() {
			if m.GetMemory() != nil {
				t.Fatalf("sections that came after the hand-over were decided: %v", m)
			}
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("the held context read was not served after the dropped sections (waited %s)", time.Since(t0))
	}
	handedOver.Store(false)
	if v := h.must(t, "s1", &memoryv1.GetSessionRequest{}).(*memoryv1.GetSessionReply).GetSession().GetVersion(); v != appended {
		t.Fatalf("the dropped sections were stored: version %d after the append's %d", v, appended)
	}
}
