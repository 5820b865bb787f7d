package segmented

import (
	"fmt"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// appendLater stores an append whose sections come later; it returns the
// user message they are for.
func appendLater(t *testing.T, s *State, msgs ...*memoryv1.MessageInput) string {
	t.Helper()
	evs, later, err := s.DecideAppendLater(&memoryv1.AppendRequest{Messages: msgs}, testEnv(t))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if assembledEvent(evs) != nil {
		t.Fatalf("an append deciding its sections later recorded some: %v", evs)
	}
	commit(t, s, fmt.Sprintf("append-%d", s.Version()), evs)
	checkInvariants(t, s)
	return later
}

func assembleLater(t *testing.T, s *State, id string, c *Candidates) []proto.Message {
	t.Helper()
	offer(s, c)
	evs, err := s.DecideAssemble(id, c, testEnv(t))
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	if len(evs) > 0 {
		commit(t, s, fmt.Sprintf("assemble-%d", s.Version()), evs)
		checkInvariants(t, s)
	}
	return evs
}

// TestAssembleLaterEqualsInBatch: the sections decided by a later command
// are those the append's own batch would have held, and the context is the
// same.
func TestAssembleLaterEqualsInBatch(t *testing.T) {
	now, _ := plantedSession(t, 1000, 60)
	later, planted := plantedSession(t, 1000, 60)
	c := func() *Candidates { return &Candidates{Recall: []*memoryv1.Message{planted}} }
	q := user("Who owns the staging database password?")
	want := assembledEvent(appendWith(t, now, c(), q))
	if want == nil || len(want.Sections.Recalled) != 1 {
		t.Fatalf("setup: the in-batch decision recalled %v", want)
	}
	id := appendLater(t, later, q)
	if id == "" {
		t.Fatal("DecideAppendLater named no user message for an assembling session")
	}
	got := assembledEvent(assembleLater(t, later, id, c()))
	if !proto.Equal(got, want) {
		t.Fatalf("later sections\n%v\nwant the in-batch ones\n%v", got, want)
	}
	// The same context, one batch later (version and seq aside).
	a, b := now.Context(), later.Context()
	a.Version, a.Seq, b.Version, b.Seq = 0, 0, 0, 0
	if !proto.Equal(a, b) {
		t.Fatalf("contexts differ:\n%v\n%v", a, b)
	}
	// Again: nothing changes, nothing is decided.
	if evs := assembleLater(t, later, id, c()); len(evs) != 0 {
		t.Fatalf("a repeated assembly decided %v", evs)
	}
}

// TestAssembleLaterStale: the sections of a user message no longer the
// latest are not decided; an assistant reply in between does not stop
// them.
func TestAssembleLaterStale(t *testing.T) {
	s, planted := plantedSession(t, 1000, 60)
	c := &Candidates{Recall: []*memoryv1.Message{planted}}
	first := appendLater(t, s, user("Who owns the staging database password?"))
	appendOK(t, s, assistant("Let me check."))
	second := appendLater(t, s, user("And when does it rotate?"))
	if evs := assembleLater(t, s, first, c); len(evs) != 0 {
		t.Fatalf("a superseded user message got sections: %v", evs)
	}
	appendOK(t, s, assistant("Looking."))
	ev := assembledEvent(assembleLater(t, s, second, c))
	if ev == nil || ev.Sections.ForMessageId != second || len(ev.Sections.Recalled) != 1 {
		t.Fatalf("the latest user message's sections: %v", ev)
	}
	// No user message, or a session that does not assemble: nothing to come.
	if id := appendLater(t, s, assistant("Priya Raman.")); id != "" {
		t.Fatalf("an assistant append names %q for later sections", id)
	}
	plain := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 2000, ReservedOutputTokens: 500, Assembly: &memoryv1.AssemblyConfig{}})
	if id := appendLater(t, plain, user("hello")); id != "" {
		t.Fatalf("a session without assembly names %q for later sections", id)
	}
}
