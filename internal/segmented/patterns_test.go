package segmented

import (
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// TestCreateWithLibrariesChecks: pattern_libraries are validated, and a
// node that cannot read libraries refuses a session naming one (503)
// rather than creating it without them.
func TestCreateWithLibrariesChecks(t *testing.T) {
	for _, tc := range []struct {
		libs  []string
		field string
		code  int
	}{
		{[]string{"a b"}, "pattern_libraries[0]", 400},
		{[]string{"sql", "sql"}, "pattern_libraries[1]", 400},
		{strings.Split("a,b,c,d,e,f,g,h,i", ","), "pattern_libraries", 413},
		{[]string{"sql"}, "pattern_libraries", 503},
	} {
		_, err := New().DecideCreate(&memoryv1.CreateSessionRequest{PatternLibraries: tc.libs}, "s", testEnv(t))
		if r := rejection(err); r == nil || r.Code != tc.code || r.Field != tc.field {
			t.Errorf("%v: %v, want %d on %s", tc.libs, err, tc.code, tc.field)
		}
	}
	if _, err := New().DecideCreate(&memoryv1.CreateSessionRequest{AgentType: "db:x"}, "s", testEnv(t)); rejection(err) == nil || rejection(err).Field != "agent_type" {
		t.Errorf("agent_type with a colon: %v, want 400 agent_type", err)
	}
}

// TestLibraryUpdateAtTurnOnly: a library change stages nothing for a tool
// result (the turn in flight) and is RomUpdated then RomActivated in the
// batch of the next user message; an unchanged library stages nothing.
func TestLibraryUpdateAtTurnOnly(t *testing.T) {
	lib := []string{"p1"}
	env := testEnv(t)
	env.Libraries = func(_ string, names []string) ([]Library, error) {
		return []Library{{Name: names[0], Patterns: lib}}, nil
	}
	s := New()
	evs, err := s.DecideCreate(&memoryv1.CreateSessionRequest{SystemPrompt: "sys", Patterns: []string{"own"}, PatternLibraries: []string{"l"}}, "s", env)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, "create", evs)
	step := func(msgs ...*memoryv1.MessageInput) []proto.Message {
		t.Helper()
		evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: msgs}, env)
		if err != nil {
			t.Fatal(err)
		}
		commit(t, s, "a"+string(rune('0'+s.Version())), evs)
		return evs
	}
	has := func(evs []proto.Message, m proto.Message) bool {
		for _, e := range evs {
			if e.ProtoReflect().Descriptor() == m.ProtoReflect().Descriptor() {
				return true
			}
		}
		return false
	}
	if evs := step(user("q"), assistant("", call("c1", "t"))); has(evs, &memoryv1.RomUpdated{}) {
		t.Fatal("an unchanged library staged a ROM")
	}
	lib = []string{"p1 v2", "p2"}
	if evs := step(toolResult("c1", "r")); has(evs, &memoryv1.RomUpdated{}) || s.snap.GetRom().GetVersion() != 1 {
		t.Fatal("a tool result took the library's change")
	}
	evs = step(user("next"))
	if !has(evs, &memoryv1.RomUpdated{}) || !has(evs, &memoryv1.RomActivated{}) {
		t.Fatalf("the next user message's batch %v", evs)
	}
	if r := s.snap.GetRom(); r.GetVersion() != 2 || strings.Join(r.GetPatterns(), "|") != "own|p1 v2|p2" || r.GetLibraries()[0].GetPatterns() != 2 {
		t.Fatalf("ROM %v", r)
	}
}
