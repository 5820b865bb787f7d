package segmented

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

var (
	testTokOnce sync.Once
	testTok     Tokenizer
)

func tokenizerT(t tb) Tokenizer {
	t.Helper()
	testTokOnce.Do(func() {
		var err error
		testTok, err = NewTokenizer()
		if err != nil {
			panic(err)
		}
	})
	return testTok
}

func testEnv(t tb) Env { return Env{NowUnixNano: 1_700_000_000_000_000_000, Tokenizer: tokenizerT(t)} }

func marshal(t tb, m proto.Message) []byte {
	t.Helper()
	if m == nil {
		return nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip returns the events as a replay would read them from the log.
func roundTrip(t tb, evs []proto.Message) []proto.Message {
	t.Helper()
	out := make([]proto.Message, len(evs))
	for i, ev := range evs {
		b := marshal(t, ev)
		n := ev.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(b, n); err != nil {
			t.Fatal(err)
		}
		out[i] = n
	}
	return out
}

// commit applies evs to s, and checks that replaying them (after a log
// round trip) on a copy restored from the snapshot gives the same bytes.
func commit(t tb, s *State, cmd string, evs []proto.Message) {
	t.Helper()
	replica := FromSnapshot(s.Snapshot())
	meta := Meta{CommandID: cmd, Version: s.Version() + 1, Seq: s.LastSeq() + 7, TimeUnixNano: int64(s.Version()+1) * 1000}
	if err := s.Apply(meta, evs); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if err := replica.Apply(meta, roundTrip(t, evs)); err != nil {
		t.Fatalf("replay apply: %v", err)
	}
	if !bytes.Equal(marshal(t, s.Snapshot()), marshal(t, replica.Snapshot())) {
		t.Fatalf("replay from snapshot differs from the live state")
	}
}

func mustCreate(t tb, req *memoryv1.CreateSessionRequest) *State {
	t.Helper()
	s := New()
	evs, err := s.DecideCreate(req, "sess-1", testEnv(t))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	commit(t, s, "create", evs)
	return s
}

func rejection(err error) *Rejection {
	var r *Rejection
	if errors.As(err, &r) {
		return r
	}
	return nil
}

func user(text string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text}
}

func assistant(text string, calls ...*memoryv1.ToolCall) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: text, ToolCalls: calls}
}

func toolResult(callID, text string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: callID, Content: text}
}

func call(id, name string) *memoryv1.ToolCall {
	return &memoryv1.ToolCall{Id: id, Name: name, Arguments: `{"q":"` + id + `"}`}
}

func appendOK(t tb, s *State, msgs ...*memoryv1.MessageInput) []proto.Message {
	t.Helper()
	evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: msgs}, testEnv(t))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	commit(t, s, fmt.Sprintf("append-%d", s.Version()), evs)
	return evs
}

// checkInvariants verifies the structural invariants that hold in every
// state, whatever the history.
func checkInvariants(t tb, s *State) {
	t.Helper()
	if !s.Exists() {
		return
	}
	snap := s.Snapshot()
	// Derived totals agree with a fresh recount.
	fresh := FromSnapshot(snap)
	if fresh.UsedTokens() != s.UsedTokens() || fresh.PlannedTokens() != s.PlannedTokens() {
		t.Fatalf("cached totals %d/%d, recount %d/%d", s.UsedTokens(), s.PlannedTokens(), fresh.UsedTokens(), fresh.PlannedTokens())
	}
	// Budget.
	if s.PlannedTokens() > s.Budget() || s.UsedTokens() > s.Budget() {
		t.Fatalf("budget: used %d planned %d > budget %d", s.UsedTokens(), s.PlannedTokens(), s.Budget())
	}
	ctx := s.Context()
	var sum uint64
	for _, m := range ctx.Messages {
		sum += uint64(m.Tokens)
	}
	if sum != s.UsedTokens() || uint64(ctx.Usage.Used) != sum {
		t.Fatalf("context tokens %d, usage %d, state %d", sum, ctx.Usage.Used, s.UsedTokens())
	}
	// Layer order.
	order := map[string]int{LayerROM: 0, LayerKernel: 1, LayerL2: 2, LayerPromoted: 3, LayerL1: 4}
	for i := 1; i < len(ctx.Messages); i++ {
		if order[ctx.Messages[i-1].Layer] > order[ctx.Messages[i].Layer] {
			t.Fatalf("layer order: %s before %s", ctx.Messages[i-1].Layer, ctx.Messages[i].Layer)
		}
	}
	// Every L1 entry newer than every L2 summary; L1 in seq order.
	var maxL2 uint64
	for _, sm := range snap.L2 {
		maxL2 = max(maxL2, sm.LastSeq)
	}
	var prev uint64
	for _, e := range snap.L1 {
		f, l := entryRange(e)
		if f <= maxL2 {
			t.Fatalf("L1 entry at seq %d not newer than L2 (up to %d)", f, maxL2)
		}
		if f <= prev || l < f {
			t.Fatalf("L1 out of order at seq %d..%d after %d", f, l, prev)
		}
		prev = l
	}
	// Summaries are bounded and strictly smaller than what they replaced.
	var sums []*memoryv1.Summary
	sums = append(sums, snap.L2...)
	for _, e := range snap.L1 {
		if sm := e.GetSummary(); sm != nil {
			sums = append(sums, sm)
		}
	}
	for _, sm := range sums {
		if sm.Tokens > snap.Config.SummaryMaxTokens+MessageOverheadTokens || sm.Tokens >= sm.CoveredTokens {
			t.Fatalf("summary %s: %d tokens, max %d, covered %d", sm.Id, sm.Tokens, snap.Config.SummaryMaxTokens, sm.CoveredTokens)
		}
	}
	if n := len(snap.Kernel.GetSchemas()); n > MaxSchemas {
		t.Fatalf("%d schemas cached", n)
	}
	if n := len(snap.Kernel.GetToolResults()); n > MaxToolResultRefs {
		t.Fatalf("%d tool result refs", n)
	}
}
