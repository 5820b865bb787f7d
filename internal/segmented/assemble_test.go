package segmented

import (
	"fmt"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

func appendWith(t *testing.T, s *State, c *Candidates, msgs ...*memoryv1.MessageInput) []proto.Message {
	t.Helper()
	offer(s, c)
	evs, err := s.DecideAppendWith(&memoryv1.AppendRequest{Messages: msgs}, c, testEnv(t))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	commit(t, s, fmt.Sprintf("append-%d", s.Version()), evs)
	checkInvariants(t, s)
	return evs
}

func assembledEvent(evs []proto.Message) *memoryv1.ContextAssembled {
	for _, ev := range evs {
		if e, ok := ev.(*memoryv1.ContextAssembled); ok {
			return e
		}
	}
	return nil
}

func layerText(s *State, layer string) string {
	var b strings.Builder
	for _, m := range hydrated(s).Messages {
		if m.Layer == layer {
			b.WriteString(m.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// plantedSession appends n filler exchanges after one planted fact, so the
// fact leaves L1 long before the end; it returns the planted message.
func plantedSession(t *testing.T, budget uint32, n int) (*State, *memoryv1.Message) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: budget + 500, ReservedOutputTokens: 500})
	evs := appendOK(t, s, user("Remember this: the staging database password rotates on the 14th, owner is Priya Raman."))
	planted := evs[1].(*memoryv1.MessagesAppended).Messages[0]
	for i := range n {
		appendOK(t, s, user(fmt.Sprintf("Filler question %d about the weather and lunch plans for the team outing?", i)),
			assistant(fmt.Sprintf("Filler answer %d: sunny, sandwiches, and a walk by the river after the standup meeting.", i)))
	}
	return s, planted
}

func TestAssembleRecallsAMessageNoLongerVerbatim(t *testing.T) {
	s, planted := plantedSession(t, 1000, 60)
	if strings.Contains(layerText(s, LayerL1), "Priya Raman") {
		t.Fatal("setup: the planted message is still verbatim in L1")
	}
	// The node's search found the planted message, plus one still in L1
	// (skipped) and the same message twice (taken once).
	inL1 := s.Snapshot().L1[len(s.Snapshot().L1)-1].GetMessage()
	c := &Candidates{Recall: []*memoryv1.Message{inL1, planted, planted}}
	evs := appendWith(t, s, c, user("Who owns the staging database password?"))
	ev := assembledEvent(evs)
	if ev == nil || len(ev.Sections.Recalled) != 1 || ev.Sections.Recalled[0].MessageId != planted.Id {
		t.Fatalf("recalled section: %v", ev)
	}
	if got := layerText(s, LayerRecalled); !strings.Contains(got, "Priya Raman") || !strings.Contains(got, "Recalled "+planted.Id) {
		t.Fatalf("context's recalled layer: %q", got)
	}
	if s.Context().Layers.Recalled == 0 {
		t.Fatal("LayerTokens.recalled is 0")
	}
	// An assistant reply keeps the section; the next user message replaces
	// it (no candidates: cleared).
	evs = appendWith(t, s, nil, assistant("Priya Raman owns it."))
	if assembledEvent(evs) != nil || s.Assembled() == nil {
		t.Fatal("an assistant message changed the sections")
	}
	evs = appendWith(t, s, nil, user("Thanks, and the weather?"))
	if ev := assembledEvent(evs); ev == nil || len(ev.Sections.Recalled) != 0 {
		t.Fatalf("a user message without candidates kept the recalled section: %v", ev)
	}
}

func TestAssembleMemoryTiers(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 4500, ReservedOutputTokens: 500,
		Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, MemoryPct: 10}})
	// memory share 10 % of 4000 = 400 tokens: task 160, user 160, global 80.
	item := func(scope, tier string, i, words int) *memoryv1.MemoryItem {
		return &memoryv1.MemoryItem{Scope: scope, Key: fmt.Sprintf("k%d", i), Version: uint64(i + 1), Tier: tier,
			Text: strings.TrimSpace(strings.Repeat(fmt.Sprintf("value%d ", i), words))}
	}
	var c Candidates
	for i := range 8 {
		c.Memory = append(c.Memory, item("global", TierGlobal, i, 20), item("user:u1", TierUser, i, 20), item("agent:a1", TierTask, i, 20))
	}
	appendWith(t, s, &c, user("What do you remember?"))
	per := map[string]uint64{}
	for _, m := range s.Assembled().Memory {
		per[m.Tier] += uint64(m.Tokens)
	}
	if per[TierTask] > 160 || per[TierUser] > 160 || per[TierGlobal] > 80 || per[TierGlobal] == 0 || per[TierTask] == 0 || per[TierUser] == 0 {
		t.Fatalf("tier tokens %v, want task, user <= 160, global <= 80, none empty", per)
	}
	if got := s.Assembled().Memory[0]; got.Tier != TierTask || !strings.HasPrefix(memText(s, got), "Memory agent:a1 k0 (v1): value0") {
		t.Fatalf("first memory item %v: want the best task candidate, naming scope, key and version", got)
	}
	// Only global candidates: they get what the other tiers left.
	var g Candidates
	for i := range 8 {
		g.Memory = append(g.Memory, item("global", TierGlobal, i, 20))
	}
	appendWith(t, s, &g, user("And now?"))
	var total uint64
	for _, m := range s.Assembled().Memory {
		total += uint64(m.Tokens)
	}
	if total <= 80 || total > 400 {
		t.Fatalf("global alone took %d tokens, want more than its 80 and at most the section's 400", total)
	}
	// An item larger than the room left is trimmed, not dropped.
	big := Candidates{Memory: []*memoryv1.MemoryItem{item("user:u1", TierUser, 9, 400)}}
	appendWith(t, s, &big, user("Big one?"))
	if m := s.Assembled().GetMemory(); len(m) != 1 || !strings.HasSuffix(memText(s, m[0]), "…") || m[0].Tokens > 400 {
		t.Fatalf("big item: %v", m)
	}
}

func TestAssembleYieldsToTheBudget(t *testing.T) {
	s, planted := plantedSession(t, 1000, 40)
	var c Candidates
	c.Recall = []*memoryv1.Message{planted}
	for i := range 10 {
		c.Memory = append(c.Memory, &memoryv1.MemoryItem{Scope: "user:u1", Key: fmt.Sprintf("k%d", i), Tier: TierUser, Text: strings.Repeat("fact ", 30)})
	}
	appendWith(t, s, &c, user("short?"))
	if sec := s.tok.recalled + s.tok.memory; sec < 100 {
		t.Fatalf("setup: sections hold %d tokens, want >= 100", sec)
	}
	// A message that fits the budget only without the sections: accepted,
	// and the sections make room in the same batch (appendWith checks the
	// context is within the budget).
	free := s.Budget() - s.tok.rom - s.tok.kernel
	huge := strings.Repeat("word ", int(free)-60)
	evs := appendWith(t, s, nil, assistant(huge))
	if ev := assembledEvent(evs); ev == nil || len(ev.Sections.Recalled) != 0 || len(ev.Sections.Memory) > 1 {
		t.Fatalf("sections not trimmed for the huge message: %v", ev)
	}
}

func TestAssembleOffAndClear(t *testing.T) {
	off := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 4500, ReservedOutputTokens: 500,
		Assembly: &memoryv1.AssemblyConfig{Recall: false, Memory: false}})
	c := &Candidates{Memory: []*memoryv1.MemoryItem{{Scope: "global", Key: "k", Tier: TierGlobal, Text: "v"}}}
	if evs := appendWith(t, off, c, user("hi")); assembledEvent(evs) != nil || off.WantsCandidates(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user("x")}}) {
		t.Fatal("a session with assembly off assembled")
	}

	s, planted := plantedSession(t, 1000, 40)
	c.Recall = []*memoryv1.Message{planted}
	appendWith(t, s, c, user("Who owns the password?"))
	if len(s.Assembled().GetRecalled()) != 1 || len(s.Assembled().GetMemory()) != 1 {
		t.Fatalf("setup: sections %v", s.Assembled())
	}
	evs, err := s.DecideClearPromoted()
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, "clear", evs)
	checkInvariants(t, s)
	if len(s.Assembled().GetRecalled()) != 0 || len(s.Assembled().GetMemory()) != 1 {
		t.Fatalf("clear recalled: sections %v, want the memory item only", s.Assembled())
	}
}

func TestValidateAssembly(t *testing.T) {
	for _, tc := range []struct {
		a     *memoryv1.AssemblyConfig
		field string
	}{
		{&memoryv1.AssemblyConfig{Recall: true, RecallPct: 101, Memory: true, MemoryPct: 20}, "assembly.recall_pct"},
		{&memoryv1.AssemblyConfig{Recall: true, RecallPct: 40, Memory: true, MemoryPct: 120}, "assembly.memory_pct"},
		{&memoryv1.AssemblyConfig{Recall: true, TaskPct: 50, UserPct: 30, GlobalPct: 10}, "assembly.task_pct"},
	} {
		_, err := New().DecideCreate(&memoryv1.CreateSessionRequest{Assembly: tc.a}, "s", testEnv(t))
		if r := rejection(err); r == nil || r.Field != tc.field {
			t.Errorf("%v: %v, want a rejection of %s", tc.a, err, tc.field)
		}
	}
	s := mustCreate(t, &memoryv1.CreateSessionRequest{})
	want := &memoryv1.AssemblyConfig{Recall: true, RecallPct: DefaultRecallPct, Memory: true, MemoryPct: DefaultMemoryPct,
		TaskPct: DefaultTaskPct, UserPct: DefaultUserPct, GlobalPct: DefaultGlobalPct}
	if !proto.Equal(s.Assembly(), want) {
		t.Fatalf("default assembly %v, want %v", s.Assembly(), want)
	}
}

// A section never holds more than MaxSectionTokens, whatever the budget,
// and choosing the same items again writes no event.
func TestAssembleCapAndNoRepeat(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{}) // 128000 - 4096: 10 % is 12390 tokens
	var c Candidates
	for i := range 40 {
		c.Memory = append(c.Memory, &memoryv1.MemoryItem{Scope: "global", Key: fmt.Sprintf("k%d", i), Tier: TierGlobal,
			Text: strings.Repeat(fmt.Sprintf("fact%d ", i), 300)})
	}
	appendWith(t, s, &c, user("Everything?"))
	if got := s.tok.memory; got > MaxSectionTokens || got < MaxSectionTokens/2 {
		t.Fatalf("memory section %d tokens, want at most %d (and filled)", got, MaxSectionTokens)
	}
	if evs := appendWith(t, s, &c, user("Everything again?")); assembledEvent(evs) != nil {
		t.Fatal("the same sections were written again")
	}
}

// TestItemTextsMatchTheirFormat checks the texts of recalled and memory
// items (built by hand, they are on the hot path) against their format.
func TestItemTextsMatchTheirFormat(t *testing.T) {
	for _, m := range []*memoryv1.Message{
		{Id: "m12", Role: memoryv1.Role_ROLE_USER, Turn: 3, Content: "What did Priya say?", SaidUnixNano: 1_740_960_000_000_000_000},
		{Id: "t00042", Role: memoryv1.Role_ROLE_ASSISTANT, Turn: 4294967295, CreatedUnixNano: 1},
		{Id: "x", Role: memoryv1.Role_ROLE_TOOL, Content: "{\"rows\": 3}", ToolCalls: []*memoryv1.ToolCall{{Name: "sql", Arguments: `{"q":"select"}`}, {Name: "fetch"}}},
		{},
	} {
		var b strings.Builder
		fmt.Fprintf(&b, "Recalled %s (%s, turn %d", m.GetId(), roleName(m.GetRole()), m.GetTurn())
		at := m.GetSaidUnixNano()
		if at == 0 {
			at = m.GetCreatedUnixNano()
		}
		if at > 0 {
			b.WriteString(", " + time.Unix(0, at).UTC().Format(time.DateOnly))
		}
		b.WriteString("): " + m.GetContent())
		for _, c := range m.GetToolCalls() {
			fmt.Fprintf(&b, "\ncall %s(%s)", c.GetName(), c.GetArguments())
		}
		if got := recalledText(m); got != b.String() {
			t.Errorf("recalledText = %q, want %q", got, b.String())
		}
	}
	for _, v := range []uint64{0, 7, 1 << 63} {
		m := &memoryv1.MemoryItem{Scope: "user:u1", Key: "diet", Version: v}
		if got, want := MemoryText(m, "vegan"), fmt.Sprintf("Memory %s %s (v%d): %s", m.GetScope(), m.GetKey(), m.GetVersion(), "vegan"); got != want {
			t.Errorf("MemoryText = %q, want %q", got, want)
		}
	}
}
