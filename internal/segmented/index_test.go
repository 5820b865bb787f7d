package segmented

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

// The reference definitions of the indexes: full scans of the snapshot, as
// DecideAppend computed them on every append before the indexes existed.

// refKnownIDs: the ids of the messages the session still knows, verbatim
// in L1 or promoted, or covered by an L1 or L2 summary.
func refKnownIDs(p *memoryv1.SessionSnapshot) map[string]bool {
	known := map[string]bool{}
	for _, sum := range p.GetL2() {
		for _, id := range sum.MessageIds {
			known[id] = true
		}
	}
	for _, m := range p.GetPromoted() {
		known[m.Id] = true
	}
	for _, e := range p.GetL1() {
		if m := e.GetMessage(); m != nil {
			known[m.Id] = true
		} else {
			for _, id := range e.GetSummary().GetMessageIds() {
				known[id] = true
			}
		}
	}
	return known
}

// refOpenCalls: the tool calls still waiting for a result (id -> name).
func refOpenCalls(p *memoryv1.SessionSnapshot) map[string]string {
	open := map[string]string{}
	for _, e := range p.GetL1() {
		m := e.GetMessage()
		if m == nil {
			continue
		}
		for _, c := range m.ToolCalls {
			open[c.Id] = c.Name
		}
		if m.Role == memoryv1.Role_ROLE_TOOL {
			delete(open, m.ToolCallId)
		}
	}
	return open
}

// refSeenCalls: the tool call ids a new call may not reuse.
func refSeenCalls(p *memoryv1.SessionSnapshot) map[string]bool {
	seen := map[string]bool{}
	for id := range refOpenCalls(p) {
		seen[id] = true
	}
	for _, r := range p.GetKernel().GetToolResults() {
		seen[r.ToolCallId] = true
	}
	for _, e := range p.GetL1() {
		if m := e.GetMessage(); m != nil {
			for _, c := range m.ToolCalls {
				seen[c.Id] = true
			}
		}
	}
	return seen
}

// checkIndexes verifies that the derived data the State maintains
// incrementally (token totals, indexes, the Context cache) equal a
// from-scratch recomputation from its snapshot.
func checkIndexes(t tb, s *State) {
	t.Helper()
	snap := s.snap
	fresh := buildIndexes(snap)
	x := s.index()
	if !maps.Equal(x.ids, fresh.ids) {
		t.Fatalf("message id index %v, recomputed %v", x.ids, fresh.ids)
	}
	if !maps.Equal(x.callIDs, fresh.callIDs) {
		t.Fatalf("tool call id index %v, recomputed %v", x.callIDs, fresh.callIDs)
	}
	if !maps.EqualFunc(x.calls, fresh.calls, slices.Equal) {
		t.Fatalf("tool call ops %v, recomputed %v", x.calls, fresh.calls)
	}
	// Against the reference scans.
	known := map[string]bool{}
	for id, n := range x.ids {
		if n <= 0 {
			t.Fatalf("message id %q counted %d", id, n)
		}
		known[id] = true
	}
	if want := refKnownIDs(snap); !maps.Equal(known, want) {
		t.Fatalf("known ids %v, reference %v", known, want)
	}
	seen := map[string]bool{}
	for id, n := range x.callIDs {
		if n <= 0 {
			t.Fatalf("tool call id %q counted %d", id, n)
		}
		seen[id] = true
	}
	if want := refSeenCalls(snap); !maps.Equal(seen, want) {
		t.Fatalf("seen tool calls %v, reference %v", seen, want)
	}
	open := map[string]string{}
	for id := range x.calls {
		if name, ok := x.open(id); ok {
			open[id] = name
		}
	}
	if want := refOpenCalls(snap); !maps.Equal(open, want) {
		t.Fatalf("open tool calls %v, reference %v", open, want)
	}
	// Token totals.
	r := &State{snap: snap}
	r.recount()
	if r.tok != s.tok {
		t.Fatalf("token totals %+v, recount %+v", s.tok, r.tok)
	}
	if s.tx.active || len(s.tx.deltas) != 0 || len(s.tx.slotsL1) != 0 || len(s.tx.slotsL2) != 0 {
		t.Fatalf("transaction left open: %+v", s.tx)
	}
	// The (possibly cached) Context equals one built from scratch.
	if s.Exists() && !bytes.Equal(marshal(t, s.Context()), marshal(t, FromSnapshot(s.Snapshot()).Context())) {
		t.Fatal("cached Context differs from a fresh one")
	}
}

// indexSnapshot copies the indexes, to check that a command left them alone.
func indexSnapshot(s *State) *indexes {
	x := s.index()
	c := &indexes{ids: maps.Clone(x.ids), callIDs: maps.Clone(x.callIDs), calls: map[string][]callOp{}}
	for k, v := range x.calls {
		c.calls[k] = slices.Clone(v)
	}
	return c
}

func sameIndexes(a, b *indexes) bool {
	return maps.Equal(a.ids, b.ids) && maps.Equal(a.callIDs, b.callIDs) && maps.EqualFunc(a.calls, b.calls, slices.Equal)
}

// TestPropertyIndexes runs random command streams (those of
// TestPropertyCommandStreams, plus promotions and broken batches) and checks
// after every command that the incrementally maintained indexes and totals
// equal a from-scratch recomputation, that a rejected command or a failed
// Apply leaves them (and the snapshot) unchanged, and that replaying the
// whole log from New() gives the same bytes and indexes.
func TestPropertyIndexes(t *testing.T) {
	tok := tokenizerT(t)
	rapid.Check(t, func(rt *rapid.T) {
		env := Env{NowUnixNano: 42, Tokenizer: tok}
		s := New()
		replica := New() // replays the round-tripped log, never decides
		var log []storedBatchT
		apply := func(cmd string, evs []proto.Message) {
			meta := Meta{CommandID: cmd, Version: s.Version() + 1, Seq: s.LastSeq() + 3, TimeUnixNano: int64(s.Version()+1) * 1000}
			if err := s.Apply(meta, evs); err != nil {
				rt.Fatalf("apply: %v", err)
			}
			rtEvs := roundTrip(rt, evs)
			if err := replica.Apply(meta, rtEvs); err != nil {
				rt.Fatalf("replica apply: %v", err)
			}
			log = append(log, storedBatchT{meta, rtEvs})
		}
		req := &memoryv1.CreateSessionRequest{
			Profile:              rapid.SampledFrom([]string{ProfileFill, ProfileBalanced, ProfileDataIntensive, ProfileConversational}).Draw(rt, "profile"),
			MaxContextTokens:     uint32(rapid.IntRange(2000, 8000).Draw(rt, "max_context")),
			ReservedOutputTokens: 500,
			MaxL2Tokens:          uint32(rapid.IntRange(200, 3000).Draw(rt, "max_l2")),
			SystemPrompt:         "You are a careful assistant.",
		}
		evs, err := s.DecideCreate(req, "prop", env)
		if err != nil {
			rt.Fatalf("create: %v", err)
		}
		apply("create", evs)
		checkIndexes(rt, s)
		m := &model{groups: map[uint64][]uint64{}, callOwner: map[string]uint64{}, romByTurn: map[uint32]uint32{}}
		var swap []*memoryv1.Message // messages that left L1 verbatim, to promote
		steps := rapid.IntRange(1, 150).Draw(rt, "steps")
		for i := range steps {
			before := marshal(rt, s.Snapshot())
			beforeIdx := indexSnapshot(s)
			var evs []proto.Message
			var err error
			switch k := rapid.IntRange(0, 24).Draw(rt, "cmd"); {
			case s.Status() == statusPaused && rapid.Bool().Draw(rt, "resume"):
				evs, err = s.DecideStatus(&memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_RESUME})
			case k < 14:
				evs, err = s.DecideAppend(m.genAppend(rt), env)
			case k < 17:
				evs, err = s.DecideKernel(genKernel(rt, m), env)
			case k == 17:
				action := memoryv1.StatusAction_STATUS_ACTION_PAUSE
				switch a := rapid.IntRange(0, 39).Draw(rt, "action"); {
				case a == 38:
					action = memoryv1.StatusAction_STATUS_ACTION_TERMINATE
				case a == 39:
					action = memoryv1.StatusAction_STATUS_ACTION_ARCHIVE
				case a >= 12:
					action = memoryv1.StatusAction_STATUS_ACTION_RESUME
				}
				evs, err = s.DecideStatus(&memoryv1.StatusRequest{Action: action})
			case k < 20:
				if ps := s.PendingSummaries(); len(ps) > 0 {
					p := rapid.SampledFrom(ps).Draw(rt, "summary")
					text := truncateTokens(p.Text, rapid.IntRange(1, int(p.Tokens)).Draw(rt, "newlen"), tok)
					if text == "" {
						text = "x"
					}
					evs, err = s.DecideReplaceSummary(p.Id, text, "", env)
				} else {
					evs, err = s.DecideStateSet("session:k", []byte("v"))
				}
			case k < 22:
				var msgs []*memoryv1.Message
				if len(swap) > 0 {
					for range rapid.IntRange(1, 3).Draw(rt, "npromote") {
						msgs = append(msgs, rapid.SampledFrom(swap).Draw(rt, "promote"))
					}
				} else {
					msgs = []*memoryv1.Message{{Id: "recalled", Role: memoryv1.Role_ROLE_USER, Content: "old", Tokens: 5}}
				}
				evs, err = s.DecidePromote(msgs, env)
			case k == 22:
				evs, err = s.DecideClearPromoted()
			case k == 23:
				// A batch that fails at its last event: nothing changes.
				if good, err := s.DecideAppend(m.genAppend(rt), env); err == nil {
					bad := append(slices.Clone(good), &memoryv1.RomActivated{Version: 999})
					meta := Meta{CommandID: "bad", Version: s.Version() + 1, Seq: s.LastSeq() + 1}
					if err := s.Apply(meta, bad); !errors.Is(err, ErrApply) {
						rt.Fatalf("step %d: broken batch applied: %v", i, err)
					}
				}
			default:
				evs, err = s.DecideStateSet(fmt.Sprintf("session:k%d", rapid.IntRange(0, 3).Draw(rt, "key")), []byte("v"))
			}
			if !bytes.Equal(before, marshal(rt, s.Snapshot())) {
				rt.Fatalf("step %d: Decide (or a failed Apply) mutated the state", i)
			}
			if !sameIndexes(beforeIdx, s.index()) {
				rt.Fatalf("step %d: Decide (or a failed Apply) mutated the indexes", i)
			}
			checkIndexes(rt, s)
			if err != nil {
				if rejection(err) == nil {
					rt.Fatalf("step %d: non-rejection error: %v", i, err)
				}
				continue
			}
			if len(evs) == 0 {
				continue
			}
			// Remember what leaves L1 verbatim, for promotions.
			for _, e := range s.snap.L1 {
				if msg := e.GetMessage(); msg != nil {
					swap = append(swap, msg)
				}
			}
			apply(fmt.Sprintf("cmd-%d", i), evs)
			m.observe(evs)
			checkIndexes(rt, s)
			checkIndexes(rt, replica)
			checkInvariants(rt, s)
			m.checkModel(rt, s)
			if len(swap) > 200 {
				swap = swap[len(swap)-200:]
			}
		}
		// Replaying the whole log from New() gives the same bytes and indexes.
		r := New()
		for _, b := range log {
			if err := r.Apply(b.meta, b.evs); err != nil {
				rt.Fatalf("replay: %v", err)
			}
		}
		if !bytes.Equal(marshal(rt, s.Snapshot()), marshal(rt, r.Snapshot())) || !bytes.Equal(marshal(rt, s.Snapshot()), marshal(rt, replica.Snapshot())) {
			rt.Fatal("replayed snapshot differs")
		}
		if !sameIndexes(s.index(), r.index()) || !sameIndexes(s.index(), FromSnapshot(s.Snapshot()).index()) {
			rt.Fatal("replayed or restored indexes differ")
		}
	})
}

type storedBatchT struct {
	meta Meta
	evs  []proto.Message
}

// TestApplyRollsBackInPlaceChanges applies batches that change L1 and L2 in
// place (appends, an in-place summary, a summary rewrite) and then fail:
// the snapshot, totals, indexes and cached Context must be unchanged.
func TestApplyRollsBackInPlaceChanges(t *testing.T) {
	// balanced: its 70 % level summarizes in place before anything is evicted.
	s := mustCreate(t, &memoryv1.CreateSessionRequest{Profile: ProfileBalanced, MaxContextTokens: 3000, ReservedOutputTokens: 500, SystemPrompt: "Be brief."})
	env := testEnv(t)
	var summarized, evicted bool
	for i := 0; !summarized || !evicted; i++ {
		if i > 300 {
			t.Fatalf("no compression: %d summarized, %v evicted", s.snap.Compressions, evicted)
		}
		evs := appendOK(t, s, user(fmt.Sprintf("Question %d about the invoice for Alice in Paris?", i)),
			assistant(strings.Repeat(fmt.Sprintf("The total for order %d is 42. ", i), 8+60*(i%3/2))))
		for _, ev := range evs {
			switch ev.(type) {
			case *memoryv1.L1Summarized:
				summarized = true
			case *memoryv1.L1Evicted:
				evicted = true
			}
		}
		checkIndexes(t, s)
	}
	ctx := s.Context()
	before := marshal(t, s.Snapshot())
	beforeIdx := indexSnapshot(s)
	beforeTok := s.tok

	// Batches that change L1 and L2 in place before an event that cannot
	// apply: a valid append (with its compression), a summary of the
	// oldest L1 run (written into L1's backing array) and rewrites of an L1
	// and an L2 summary.
	evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{assistant("ok")}}, env)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := entryRange(s.snap.L1[0])
	_, last := entryRange(s.snap.L1[1])
	var ids []string
	for _, e := range s.snap.L1[:2] {
		if m := e.GetMessage(); m != nil {
			ids = append(ids, m.Id)
		} else {
			ids = append(ids, e.GetSummary().GetMessageIds()...)
		}
	}
	inPlace := []proto.Message{
		&memoryv1.MessagesAppended{Messages: []*memoryv1.Message{{Id: "n1", Seq: s.snap.NextMessageSeq, Role: memoryv1.Role_ROLE_ASSISTANT, Content: "n", Tokens: 5}}},
		&memoryv1.L1Summarized{Summary: &memoryv1.Summary{Id: "sx", FirstSeq: first, LastSeq: last, Text: "x", Tokens: 5, MessageIds: ids}},
		&memoryv1.SummaryReplaced{SummaryId: "sx", Text: "y", Tokens: 4, Source: SourceLLM},
	}
	if len(s.snap.L2) == 0 {
		t.Fatal("L2 is empty")
	}
	{
		inPlace = append(inPlace, &memoryv1.SummaryReplaced{SummaryId: s.snap.L2[0].Id, Text: "y", Tokens: 5, Source: SourceLLM})
	}
	batches := [][]proto.Message{
		append(slices.Clone(evs), &memoryv1.SessionCreated{}),
		append(slices.Clone(inPlace), &memoryv1.SummaryReplaced{SummaryId: "s-none", Text: "z", Tokens: 1}),
		append(slices.Clone(inPlace), &memoryv1.L2Archived{}, &memoryv1.MessagesPromoted{Messages: []*memoryv1.Message{{Id: "p", Tokens: 3}}},
			&memoryv1.PromotedCleared{MessageIds: []string{"p"}}, &memoryv1.L1Evicted{Summary: &memoryv1.Summary{FirstSeq: 999, LastSeq: 999}}),
	}
	// The in-place batch itself is valid: check it first on a copy.
	cp := FromSnapshot(s.Snapshot())
	commit(t, cp, "in-place", inPlace)
	checkIndexes(t, cp)
	for i, b := range batches {
		if err := s.Apply(Meta{CommandID: "x", Version: s.Version() + 1}, b); !errors.Is(err, ErrApply) {
			t.Fatalf("batch %d: %v", i, err)
		}
		if !bytes.Equal(before, marshal(t, s.Snapshot())) {
			t.Fatalf("batch %d: failed Apply changed the snapshot", i)
		}
		if !sameIndexes(beforeIdx, s.index()) || s.tok != beforeTok {
			t.Fatalf("batch %d: failed Apply changed the derived state", i)
		}
		if s.Context() != ctx {
			t.Fatalf("batch %d: failed Apply dropped the cached Context", i)
		}
		checkIndexes(t, s)
	}
	// The same events without the broken tail apply, and invalidate the cache.
	commit(t, s, "ok", evs)
	checkIndexes(t, s)
	if s.Context() == ctx {
		t.Fatal("Context not rebuilt after Apply")
	}
}

// TestDecideAppendLongSessionChecks checks the indexes answer DecideAppend
// on a long session as the reference scans would: duplicate ids,
// reused and unknown tool call ids, answers to open calls.
func TestDecideAppendLongSessionChecks(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 1_000_000, ReservedOutputTokens: 1000})
	env := testEnv(t)
	for i := range 300 {
		id := fmt.Sprintf("call%d", i)
		evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
			{Id: fmt.Sprintf("u%d", i), Role: memoryv1.Role_ROLE_USER, Content: "go"},
			assistant("", call(id, "sql"), call(id+"b", "fetch")),
			toolResult(id, "rows"),
		}}, env)
		if err != nil {
			t.Fatal(err)
		}
		commit(t, s, fmt.Sprintf("c%d", i), evs)
	}
	checkIndexes(t, s)
	try := func(code int, field string, msgs ...*memoryv1.MessageInput) {
		t.Helper()
		_, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: msgs}, env)
		if code == 0 {
			if err != nil {
				t.Fatalf("%v", err)
			}
			return
		}
		checkRejection(t, err, code, field)
	}
	try(409, "messages[0].id", &memoryv1.MessageInput{Id: "u17", Role: memoryv1.Role_ROLE_USER, Content: "again"})
	try(409, "messages[0].tool_calls[0].id", assistant("", call("call5", "sql")))
	try(409, "messages[0].tool_calls[0].id", assistant("", call("call5b", "sql")))
	try(400, "messages[1].tool_calls[0].id", assistant("", call("n1", "sql")), assistant("", call("n1", "sql")))
	try(400, "messages[0].tool_call_id", toolResult("call5", "again"))
	try(400, "messages[1].tool_call_id", toolResult("call5b", "ok"), toolResult("call5b", "twice"))
	try(400, "messages[1].tool_call_id", assistant("", call("n2", "sql")), toolResult("nope", "x"))
	try(0, "", toolResult("call5b", "ok"), toolResult("call299b", "ok"))
	try(0, "", assistant("", call("n3", "sql")), toolResult("n3", "x"))
	evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{toolResult("call7b", "late")}}, env)
	if err != nil {
		t.Fatal(err)
	}
	ma := evs[0].(*memoryv1.MessagesAppended)
	if ref := ma.ToolResultRefs[0]; ref.ToolName != "fetch" || ref.ToolCallId != "call7b" {
		t.Fatalf("ref %v", ref)
	}
	commit(t, s, "late", evs)
	checkIndexes(t, s)
	try(400, "messages[0].tool_call_id", toolResult("call7b", "again"))
}

// TestIndexesFollowAnySummaries applies hand-made compression events the
// policy would not decide (a run in the middle of L1, a tool-call group cut
// in two, summaries listing other ids than they cover) and checks the
// indexes still equal a from-scratch recomputation.
func TestIndexesFollowAnySummaries(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 100_000, ReservedOutputTokens: 1000})
	appendOK(t, s, &memoryv1.MessageInput{Id: "u1", Role: memoryv1.Role_ROLE_USER, Content: "go"},
		assistant("", call("a", "sql"), call("b", "fetch")), toolResult("a", "rows"))
	appendOK(t, s, toolResult("b", "page"), assistant("done"), &memoryv1.MessageInput{Id: "u2", Role: memoryv1.Role_ROLE_USER, Content: "more"},
		assistant("", call("c", "sql")))
	checkIndexes(t, s)
	// L1 seqs: 1 u1, 2 calls a+b, 3 result a, 4 result b, 5 done, 6 u2, 7 call c.
	ids := func(from, to int) []string {
		var out []string
		for _, e := range s.snap.L1[from:to] {
			if m := e.GetMessage(); m != nil {
				out = append(out, m.Id)
			} else {
				out = append(out, e.GetSummary().GetMessageIds()...)
			}
		}
		return out
	}
	sum := func(id string, first, last uint64, ids []string) *memoryv1.Summary {
		return &memoryv1.Summary{Id: id, FirstSeq: first, LastSeq: last, Text: "x", Tokens: 5, MessageIds: ids}
	}
	steps := [][]proto.Message{
		// A run in the middle holding the result of b only: b is open again.
		{&memoryv1.L1Summarized{Summary: sum("s1", 4, 5, ids(3, 5))}},
		// The oldest run cuts the a/b group; its summary lists other ids.
		{&memoryv1.L1Summarized{Summary: sum("s2", 1, 2, []string{"zz", "u1", "u1"})}},
		// Evict with the ids of the run (counts unchanged), then with others.
		{&memoryv1.L1Evicted{Summary: sum("s3", 1, 3, nil)}},
		{&memoryv1.MessagesPromoted{Messages: []*memoryv1.Message{{Id: "u1", Tokens: 2}, {Id: "m3", Tokens: 2}}}},
		{&memoryv1.L1Summarized{Summary: sum("s4", 4, 6, nil)}},
		{&memoryv1.L1Evicted{Summary: sum("s5", 4, 6, []string{"m4"})}},
		{&memoryv1.PromotedCleared{MessageIds: []string{"m3"}}, &memoryv1.L2Archived{}},
	}
	for i, evs := range steps {
		switch e := evs[0].(type) {
		case *memoryv1.L1Evicted:
			if e.Summary.MessageIds == nil {
				e.Summary.MessageIds = ids(0, 2)
			}
		case *memoryv1.L1Summarized:
			if e.Summary.MessageIds == nil {
				e.Summary.MessageIds = ids(0, 2)
			}
		}
		commit(t, s, fmt.Sprintf("step-%d", i), evs)
		checkIndexes(t, s)
	}
	if _, open := s.index().open("c"); !open {
		t.Fatal("call c not open")
	}
	// The policy's shapes: in-place summaries moved to L2 as they are, the
	// oldest L2 summaries archived with a condensed one in their place.
	appendOK(t, s, toolResult("c", "ok"), assistant("one"), assistant("two"), &memoryv1.MessageInput{Id: "u3", Role: memoryv1.Role_ROLE_USER, Content: "three"})
	// L1 seqs: 7 call c, 8 result c, 9 one, 10 two, 11 u3.
	steps = [][]proto.Message{
		{&memoryv1.L1Summarized{Summary: sum("s6", 7, 8, []string{"m7", "m8"})}},
		{&memoryv1.L1Summarized{Summary: sum("s7", 9, 9, []string{"m9"})}},
		{&memoryv1.L1Evicted{MovedSummaryIds: []string{"s6"}}},
		{&memoryv1.L1Evicted{MovedSummaryIds: []string{"s7"}, Summary: sum("s8", 10, 10, []string{"m10"})}},
		{&memoryv1.L2Archived{Summaries: []*memoryv1.Summary{sum("s6", 7, 8, nil), sum("s7", 9, 9, nil)},
			Condensed: &memoryv1.Summary{Id: "s9", FirstSeq: 7, LastSeq: 9, Text: "y", Tokens: 3, SummaryIds: []string{"s6", "s7"}}}},
		{&memoryv1.L2Archived{Summaries: []*memoryv1.Summary{sum("s9", 7, 9, nil)}}},
	}
	for i, evs := range steps {
		commit(t, s, fmt.Sprintf("policy-step-%d", i), evs)
		checkIndexes(t, s)
	}
	if l2 := s.snap.L2; len(l2) != 1 || l2[0].Id != "s8" || s.snap.ArchivedL2Count != 3+2 {
		t.Fatalf("L2 %v, archived %d", l2, s.snap.ArchivedL2Count)
	}
	// Events that do not fit the state are refused.
	for _, ev := range []proto.Message{
		&memoryv1.L1Evicted{},
		&memoryv1.L1Evicted{MovedSummaryIds: []string{"s8"}},
		&memoryv1.L2Archived{Summaries: []*memoryv1.Summary{sum("s7", 9, 9, nil)}},
		&memoryv1.L2Archived{Summaries: []*memoryv1.Summary{sum("s8", 10, 10, nil), sum("s8", 10, 10, nil)}},
	} {
		if err := s.Apply(Meta{Version: s.Version() + 1}, []proto.Message{ev}); err == nil {
			t.Fatalf("applied %v", ev)
		}
	}
}
