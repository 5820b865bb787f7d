package segmented

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
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
	noteStored(s, evs)
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
	// The day marks kept as events apply are the ones a fresh look finds.
	if marked, tokens := s.marksFor(snap.GetAssembled()); !slices.Equal(marked, s.marked) || tokens != s.tok.marks {
		t.Fatalf("day marks kept %v (%d tokens), a fresh look finds %v (%d)", s.marked, s.tok.marks, marked, tokens)
	}
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
	order := map[string]int{LayerROM: 0, LayerKernel: 1, LayerMemory: 2, LayerL2: 3, LayerRecalled: 4, LayerPromoted: 5, LayerL1: 6}
	for i := 1; i < len(ctx.Messages); i++ {
		if order[ctx.Messages[i-1].Layer] > order[ctx.Messages[i].Layer] {
			t.Fatalf("layer order: %s before %s", ctx.Messages[i-1].Layer, ctx.Messages[i].Layer)
		}
	}
	checkSections(t, s)
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
	// L2 stays within max_l2_tokens: its oldest summaries are archived
	// whenever it would exceed it.
	if l2 := s.tok.l2; l2 > uint64(snap.Config.GetMaxL2Tokens()) {
		t.Fatalf("L2 holds %d tokens > max_l2_tokens %d", l2, snap.Config.GetMaxL2Tokens())
	}
	// In-place summaries lead L1; a condensed summary can only lead L2.
	inPlace := true
	for _, e := range snap.L1 {
		if e.GetSummary() == nil {
			inPlace = false
		} else if !inPlace {
			t.Fatalf("in-place summary %s after a verbatim message", e.GetSummary().Id)
		}
		if len(e.GetSummary().GetSummaryIds()) > 0 {
			t.Fatalf("condensed summary %s in L1", e.GetSummary().Id)
		}
	}
	for i, sm := range snap.L2 {
		if i > 0 && len(sm.SummaryIds) > 0 {
			t.Fatalf("condensed summary %s at L2 position %d", sm.Id, i)
		}
	}
	if n := len(snap.Kernel.GetSchemas()); n > MaxSchemas {
		t.Fatalf("%d schemas cached", n)
	}
	if n := len(snap.Kernel.GetToolResults()); n > MaxToolResultRefs {
		t.Fatalf("%d tool result refs", n)
	}
}

// checkCompressionEvents replays evs one at a time on a copy of s (the state
// before them) and checks each compression event against the state it was
// decided on:
//
//   - a new summary (L1Summarized, or L1Evicted's) covers verbatim messages
//     only, and lists exactly their ids: a summary is never the input of a
//     later summary;
//   - L1Evicted moves the leading in-place summaries as they are;
//   - L2Archived archives only the oldest L2 summaries, and only when L2
//     exceeds max_l2_tokens or the budget does not hold; a condensed summary
//     lists exactly the archived ones;
//   - compression starts only when the usage calls for it (the profile's
//     start_pct; for fill, only when the command would not fit).
func checkCompressionEvents(t tb, s *State, evs []proto.Message) {
	t.Helper()
	sc := FromSnapshot(s.Snapshot())
	started := false
	start := func(i int) {
		t.Helper()
		if started {
			return
		}
		started = true
		c := &compressor{sc: sc, prof: sc.snap.GetConfig().GetProfile(), budget: sc.Budget()}
		if !c.started() {
			t.Fatalf("event %d compresses at %d of %d tokens (profile %s): the context fits", i, sc.PlannedTokens(), sc.Budget(), c.prof.GetName())
		}
	}
	checkRun := func(sum *memoryv1.Summary) {
		t.Helper()
		var ids []string
		for _, e := range sc.snap.L1 {
			f, l := entryRange(e)
			if l < sum.FirstSeq || f > sum.LastSeq {
				continue
			}
			m := e.GetMessage()
			if m == nil {
				t.Fatalf("summary %s (seq %d-%d) summarizes summary %s", sum.Id, sum.FirstSeq, sum.LastSeq, e.GetSummary().GetId())
			}
			ids = append(ids, m.Id)
		}
		if !slices.Equal(ids, sum.MessageIds) || len(sum.SummaryIds) > 0 {
			t.Fatalf("summary %s lists %v / %v, covers %v", sum.Id, sum.MessageIds, sum.SummaryIds, ids)
		}
	}
	for i, ev := range evs {
		switch ev.(type) {
		case *memoryv1.L1Summarized, *memoryv1.L1Evicted, *memoryv1.L2Archived:
			start(i)
		}
		switch e := ev.(type) {
		case *memoryv1.L1Summarized:
			checkRun(e.Summary)
		case *memoryv1.L1Evicted:
			for j, id := range e.MovedSummaryIds {
				if sc.snap.L1[j].GetSummary().GetId() != id {
					t.Fatalf("event %d moves %s, not the oldest L1 summary", i, id)
				}
			}
			if e.Summary != nil && len(e.MovedSummaryIds) > 0 {
				// Move first, then check the run the new summary covers.
				if err := sc.Apply(Meta{Version: sc.Version() + 1}, []proto.Message{&memoryv1.L1Evicted{MovedSummaryIds: e.MovedSummaryIds}}); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				ev = &memoryv1.L1Evicted{Summary: e.Summary}
			}
			if e.Summary != nil {
				checkRun(e.Summary)
			}
		case *memoryv1.L2Archived:
			maxL2 := uint64(sc.snap.Config.GetMaxL2Tokens())
			if sc.tok.l2 <= maxL2 && sc.PlannedTokens() <= sc.Budget() {
				t.Fatalf("event %d archives L2 (%d tokens of max %d) while the budget holds (%d of %d)", i, sc.tok.l2, maxL2, sc.PlannedTokens(), sc.Budget())
			}
			var ids []string
			for j, sm := range e.Summaries {
				if sc.snap.L2[j].GetId() != sm.Id {
					t.Fatalf("event %d archives %s, not the oldest L2 summaries", i, sm.Id)
				}
				ids = append(ids, sm.Id)
			}
			if c := e.Condensed; c != nil && (!slices.Equal(c.SummaryIds, ids) || len(c.MessageIds) > 0) {
				t.Fatalf("condensed summary %s lists %v, archives %v", c.Id, c.SummaryIds, ids)
			}
		}
		if err := sc.Apply(Meta{Version: sc.Version() + 1}, []proto.Message{ev}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
}

// checkSections verifies the assembled sections: each within its share of
// the budget (memory tiers within theirs when each tier had enough
// candidates is a decision property, tested in assemble_test), items
// counted as sent, recalled items in seq order and never verbatim in L1.
func checkSections(t tb, s *State) {
	t.Helper()
	sec, a := s.Assembled(), s.Assembly()
	if sec == nil {
		return
	}
	if a == nil {
		t.Fatalf("sections in a session without assembly")
	}
	tok := tokenizerT(t)
	verbatim := map[uint64]bool{}
	for _, e := range s.Snapshot().L1 {
		if m := e.GetMessage(); m != nil {
			verbatim[m.Seq] = true
		}
	}
	var recalled, memory uint64
	var prev uint64
	for _, r := range sec.Recalled {
		if r.SessionId != "" {
			continue // another session's: a reference, bounded by the room only
		}
		recalled += uint64(r.Tokens)
		if r.SummaryId != "" {
			// An archived summary: a reference (text_bytes of its text).
			if r.Text != "" || r.TextBytes == 0 || r.Tokens == 0 {
				t.Fatalf("recalled summary %s is not a reference: %v", r.SummaryId, r)
			}
			continue
		}
		if text := recText(s, r); r.Tokens != textTokens(tok, text) {
			t.Fatalf("recalled %s counts %d tokens, its text %d", r.MessageId, r.Tokens, textTokens(tok, text))
		}
		if r.Seq <= prev {
			t.Fatalf("recalled section out of seq order at %s", r.MessageId)
		}
		prev = r.Seq
		if verbatim[r.Seq] {
			t.Fatalf("recalled %s is verbatim in L1 too", r.MessageId)
		}
	}
	for _, m := range sec.Memory {
		memory += uint64(m.Tokens)
		if text := memText(s, m); m.Tokens != textTokens(tok, text) {
			t.Fatalf("memory %s/%s counts %d tokens, its text %d", m.Scope, KeyName(m, ""), m.Tokens, textTokens(tok, text))
		}
	}
	// The recalled section's copies are capped at MaxRecalledTokens (the
	// log holds their text), the memory section at MaxSectionTokens.
	if recalled > min(s.Budget()*uint64(a.RecallPct)/100, MaxRecalledTokens) || memory > s.sectionCap(a.MemoryPct) {
		t.Fatalf("sections %d recalled + %d memory tokens exceed their shares (%d%%, %d%% of %d)", recalled, memory, a.RecallPct, a.MemoryPct, s.Budget())
	}
}

// offered remembers, per session state, the value each memory candidate
// (scope, key, version) was offered with: the log keeps a reference to
// the text, not the text (MemoryItem.text_bytes), and the checks read it
// back as the node does (HydrateMemory). The first value of a triple wins
// and later candidates of the same triple are given it: one entry version
// has one value.
var offered sync.Map // *State → *sync.Map[string]string

func offer(s *State, c *Candidates) {
	if c == nil {
		return
	}
	recallOffered(s, c)
	m, _ := offered.LoadOrStore(s, &sync.Map{})
	vals := m.(*sync.Map)
	for _, it := range c.Memory {
		v, _ := vals.LoadOrStore(offeredKey(it), [2]string{it.GetKey(), it.GetText()})
		it.Text = v.([2]string)[1]
	}
}

// memText is the text memory item m of s's sections shows.
func memText(s *State, m *memoryv1.MemoryItem) string {
	if m.GetText() != "" {
		return m.GetText()
	}
	vals, ok := offered.Load(s)
	if !ok {
		return ""
	}
	v, ok := vals.(*sync.Map).Load(offeredKey(m))
	if !ok {
		return ""
	}
	kv := v.([2]string)
	return itemText(m, kv[0], kv[1])
}

// offeredKey names the entry version of memory item m (a candidate names
// its key, a section's item its digest) in offered: scope, digest and
// version.
func offeredKey(m *memoryv1.MemoryItem) string {
	return m.GetScope() + "\x00" + string(ItemKeySum(m)) + "\x00" + fmt.Sprint(m.GetVersion())
}

// recalled remembers, per session state, the session's own messages
// offered as recall candidates, by seq: the log keeps a reference to
// them (RecalledItem.text_bytes), and the checks read the text back as
// the node does (Hydrate).
var recalled sync.Map // *State → *sync.Map[uint64]*memoryv1.Message

// recallOffered records the session's own recall candidates of c.
func recallOffered(s *State, c *Candidates) {
	m, _ := recalled.LoadOrStore(s, &sync.Map{})
	for i, r := range c.Recall {
		if r != nil && sessionOf(c, i) == "" {
			m.(*sync.Map).Store(r.GetSeq(), r)
		}
	}
}

// stored remembers, per session state, the messages its commits
// appended, by seq (as the projection keeps them).
var stored sync.Map // *State → *sync.Map[uint64]*memoryv1.Message

// noteStored records the messages evs, applied to s, appended.
func noteStored(s *State, evs []proto.Message) {
	m, _ := stored.LoadOrStore(s, &sync.Map{})
	for _, ev := range evs {
		if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
			for _, x := range ma.GetMessages() {
				m.(*sync.Map).Store(x.GetSeq(), x)
			}
		}
	}
}

// ownMessage returns the session's own message seq as offered to s (else
// as s stored it).
func ownMessage(s *State, seq uint64) (*memoryv1.Message, bool) {
	for _, from := range []*sync.Map{&recalled, &stored} {
		m, ok := from.Load(s)
		if !ok {
			continue
		}
		if v, ok := m.(*sync.Map).Load(seq); ok {
			return v.(*memoryv1.Message), true
		}
	}
	return nil, false
}

// recText is the text recalled item r of the session's own (a message,
// not an archived summary) shows: its text when stored, else read back
// from the message offered.
func recText(s *State, r *memoryv1.RecalledItem) string {
	if r.GetText() != "" {
		return r.GetText()
	}
	m, ok := ownMessage(s, r.GetSeq())
	if !ok {
		return ""
	}
	return recalledItemText(r, m)
}

// hydrated is s's context with the references filled in as the node
// does: the session's own recalled messages from those offered to s.
func hydrated(s *State) *memoryv1.ContextReply {
	return Hydrate(s.Context(), Sources{Message: func(sid string, seq uint64) (*memoryv1.Message, bool) {
		if sid != s.snap.GetSessionId() {
			return nil, false
		}
		return ownMessage(s, seq)
	}})
}
