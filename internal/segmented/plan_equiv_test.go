package segmented

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/internal/convgen"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

// lockstep runs two copies of a session: ref decides with planReference,
// inc with the incremental planner (plan). Every command is decided by
// both and must give byte-identical events (or the same rejection); the
// events are then applied to both.
type lockstep struct {
	ref, inc *State
	// fast applies the events without commit's replay check.
	fast bool
}

func newLockstep(t tb, req *memoryv1.CreateSessionRequest) *lockstep {
	t.Helper()
	l := &lockstep{ref: mustCreate(t, req), inc: mustCreate(t, req)}
	l.ref.planWith = (*State).planReference
	return l
}

// step decides with both, compares, and commits; it returns the events
// (nil on a rejection).
func (l *lockstep) step(t tb, cmd string, decide func(s *State) ([]proto.Message, error)) []proto.Message {
	t.Helper()
	want, werr := decide(l.ref)
	got, gerr := decide(l.inc)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%s: reference says %v, incremental %v", cmd, werr, gerr)
	}
	if werr != nil {
		if rejection(werr) == nil {
			t.Fatalf("%s: %v", cmd, werr)
		}
		return nil
	}
	sameEvents(t, cmd, want, got)
	if l.fast {
		meta := Meta{CommandID: cmd, Version: l.ref.Version() + 1, Seq: l.ref.LastSeq() + 1}
		if err := l.ref.Apply(meta, want); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if err := l.inc.Apply(meta, got); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		noteStored(l.ref, want)
		noteStored(l.inc, got)
		return got
	}
	commit(t, l.ref, cmd, want)
	commit(t, l.inc, cmd, got)
	return got
}

func sameEvents(t tb, cmd string, want, got []proto.Message) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d events from the reference, %d incremental\nreference %v\nincremental %v", cmd, len(want), len(got), want, got)
	}
	for i := range want {
		if w, g := marshal(t, want[i]), marshal(t, got[i]); !bytes.Equal(w, g) {
			t.Fatalf("%s: event %d (%T) differs:\nreference   %v\nincremental %v", cmd, i, want[i], want[i], got[i])
		}
	}
}

// TestPlanMatchesReference checks the incremental planner against the
// reference (planReference) on random sessions: every profile, budgets
// from 2,000 to 60,000 tokens, messages of 1 to 300 words, tool calls
// (parallel, answered late or never), kernel and ROM changes, promotions,
// summary rewrites, pauses; recall candidates in L1, in the tail, in the
// swap and promoted, with and without scores, and memory candidates of
// every tier. Between commands the incremental state also decides
// commands that are never stored (a log that failed the append), is
// restored from its snapshot (a cold cache), or answers a rejection: its
// cache must never change an outcome.
func TestPlanMatchesReference(t *testing.T) {
	tok := tokenizerT(t)
	seen := eventKinds{}
	plans := 0
	defer func() { t.Logf("plans compared: %d; events: %v", plans, seen) }()
	rapid.Check(t, func(rt *rapid.T) {
		env := Env{NowUnixNano: 42, Tokenizer: tok}
		budget := rapid.SampledFrom([]int{2000, 3000, 5000, 8000, 20000, 60000}).Draw(rt, "max_context")
		req := &memoryv1.CreateSessionRequest{
			Profile:              rapid.SampledFrom([]string{ProfileFill, ProfileBalanced, ProfileDataIntensive, ProfileConversational}).Draw(rt, "profile"),
			MaxContextTokens:     uint32(budget),
			ReservedOutputTokens: 500,
			MaxL2Tokens:          uint32(rapid.IntRange(200, max(300, budget/4)).Draw(rt, "max_l2")),
			SystemPrompt:         "You are a careful assistant.",
		}
		switch rapid.IntRange(0, 3).Draw(rt, "assembly") {
		case 1:
			req.Assembly = &memoryv1.AssemblyConfig{Recall: true, Memory: true,
				RecallPct: uint32(rapid.IntRange(1, 100).Draw(rt, "recall_pct")), MemoryPct: uint32(rapid.IntRange(1, 100).Draw(rt, "memory_pct"))}
		case 2:
			req.Assembly = &memoryv1.AssemblyConfig{Recall: true}
		}
		l := newLockstep(rt, req)
		m := &model{groups: map[uint64][]uint64{}, callOwner: map[string]uint64{}, romByTurn: map[uint32]uint32{}}
		for i := range rapid.IntRange(1, 200).Draw(rt, "steps") {
			cmd := fmt.Sprintf("cmd-%d", i)
			var evs []proto.Message
			switch k := rapid.IntRange(0, 24).Draw(rt, "cmd"); {
			case k < 14:
				c := m.genCandidates(rt)
				if c != nil && rapid.Bool().Draw(rt, "recent_hits") {
					// Hits among the newest messages: older L1 spans raised,
					// the tail, promoted ones.
					for j := max(0, len(m.stored)-40); j < len(m.stored); j += rapid.IntRange(1, 6).Draw(rt, "hit_step") {
						c.Recall = append(c.Recall, m.stored[j])
						if len(c.RecallScores) > 0 {
							c.RecallScores = append(c.RecallScores, float64(rapid.IntRange(0, 20).Draw(rt, "score")))
						}
					}
				}
				offer(l.ref, c)
				offer(l.inc, c)
				req := m.genAppend(rt)
				evs = l.step(rt, cmd, func(s *State) ([]proto.Message, error) { return s.DecideAppendWith(req, c, env) })
				m.observe(evs)
				if assembledEvent(evs) != nil {
					plans++
				}
			case k < 16:
				// Decided, never stored: only the incremental state, with
				// recall candidates (the memory texts stay the lockstep's).
				req := m.genAppend(rt)
				var c *Candidates
				if len(m.stored) > 0 {
					c = &Candidates{Recall: []*memoryv1.Message{rapid.SampledFrom(m.stored).Draw(rt, "lost_hit")}}
				}
				_, _ = l.inc.DecideAppendWith(req, c, env)
			case k == 16:
				old := l.inc
				l.inc = FromSnapshot(old.Snapshot())
				for _, m := range []*sync.Map{&offered, &recalled, &stored} {
					if v, ok := m.Load(old); ok {
						m.Store(l.inc, v)
					}
				}
			case k < 19:
				kreq := genKernel(rt, m)
				evs = l.step(rt, cmd, func(s *State) ([]proto.Message, error) { return s.DecideKernel(kreq, env) })
			case k == 19 && len(m.stored) > 0:
				var msgs []*memoryv1.Message
				for range rapid.IntRange(1, 3).Draw(rt, "npromote") {
					msgs = append(msgs, rapid.SampledFrom(m.stored).Draw(rt, "promote"))
				}
				evs = l.step(rt, cmd, func(s *State) ([]proto.Message, error) { return s.DecidePromote(msgs, env) })
			case k == 20:
				evs = l.step(rt, cmd, func(s *State) ([]proto.Message, error) { return s.DecideClearPromoted() })
			case k == 21:
				if ps := l.inc.PendingSummaries(); len(ps) > 0 {
					p := rapid.SampledFrom(ps).Draw(rt, "summary")
					text := truncateTokens(p.Text, rapid.IntRange(1, int(p.Tokens)+10).Draw(rt, "newlen"), tok)
					if text == "" {
						text = "x"
					}
					evs = l.step(rt, cmd, func(s *State) ([]proto.Message, error) { return s.DecideReplaceSummary(p.Id, text, "", env) })
				}
			case k == 22:
				action := memoryv1.StatusAction_STATUS_ACTION_PAUSE
				if l.inc.Status() == memoryv1.SessionStatus_SESSION_STATUS_PAUSED {
					action = memoryv1.StatusAction_STATUS_ACTION_RESUME
				}
				evs = l.step(rt, cmd, func(s *State) ([]proto.Message, error) {
					return s.DecideStatus(&memoryv1.StatusRequest{Action: action})
				})
			default:
				if l.inc.Status() == memoryv1.SessionStatus_SESSION_STATUS_PAUSED {
					evs = l.step(rt, cmd, func(s *State) ([]proto.Message, error) {
						return s.DecideStatus(&memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_RESUME})
					})
				}
			}
			seen.note(evs)
			if !bytes.Equal(marshal(rt, l.ref.Snapshot()), marshal(rt, l.inc.Snapshot())) {
				rt.Fatalf("%s: the states differ", cmd)
			}
			checkInvariants(rt, l.inc)
		}
	})
}

// TestPlanMatchesReferenceOnAConversation checks the incremental planner
// against the reference on a long generated conversation (user messages,
// replies with tool calls and bulky results), with the candidates a node
// would offer at every user message, under budgets that keep from a few
// dozen to several hundred entries in L1.
func TestPlanMatchesReferenceOnAConversation(t *testing.T) {
	messages := 1500
	if testing.Short() {
		messages = 400
	}
	conv, err := convgen.Generate(convgen.Config{Seed: 3, Sittings: messages/300 + 1, MessagesPerSitting: 300,
		CheckpointsPerSitting: 1, StartUnixNano: 1_740_960_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	for _, budget := range []uint32{4000, 28500} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			l := newLockstep(t, &memoryv1.CreateSessionRequest{SystemPrompt: conv.SystemPrompt, MaxContextTokens: budget, ReservedOutputTokens: 1000})
			l.fast = true
			stored := &storedWords{}
			plans := 0
			for i, a := range conv.Appends {
				if a.Start >= messages {
					break
				}
				req := appendRequest(conv, a)
				var c *Candidates
				if req.Messages[0].Role == memoryv1.Role_ROLE_USER {
					c = benchCandidates(conv, stored, req.Messages[0].Content, i, 45, 20)
					offer(l.ref, c)
					offer(l.inc, c)
				}
				evs := l.step(t, fmt.Sprintf("append-%d", i), func(s *State) ([]proto.Message, error) { return s.DecideAppendWith(req, c, env) })
				if assembledEvent(evs) != nil {
					plans++
				}
				for _, ev := range evs {
					if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
						stored.add(ma.Messages...)
					}
				}
			}
			if !bytes.Equal(marshal(t, l.ref.Snapshot()), marshal(t, l.inc.Snapshot())) {
				t.Fatal("the states differ")
			}
			checkInvariants(t, l.inc)
			t.Logf("%d plans compared; at the end %d L1 entries, %d L2 summaries", plans, len(l.inc.snap.GetL1()), len(l.inc.snap.GetL2()))
		})
	}
}

// TestPlainOrderRepairsAStaleOrder gives plainOrder a kept order that is
// wrong for the values of this plan (as a rounding of two equal values per
// token can make it), with new spans to place and without: once allocate
// checked it (and sorted it when it did not hold), the order is
// Allocate's all the same, and so is what allocate chooses for a room
// drawn at random (its check runs as it fills the room).
func TestPlainOrderRepairsAStaleOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 60).Draw(rt, "spans")
		var spans []l1Span
		for k := range n {
			tokens := uint64(rapid.SampledFrom([]int{0, 10, 40, 80, 160, 333}).Draw(rt, "tokens"))
			spans = append(spans, l1Span{seq: uint64(10 * (k + 1)), from: int32(k), to: int32(k + 1), tokens: tokens,
				bare: rapid.IntRange(0, 4).Draw(rt, "bare") == 0, summary: k < 2 && rapid.Bool().Draw(rt, "summary")})
		}
		// The last plan: some of the spans (the newest left out: new in
		// this one), in an order drawn at random.
		kept := rapid.IntRange(0, n).Draw(rt, "kept")
		var stale []int32
		for k, sp := range spans[:kept] {
			if !sp.summary {
				stale = append(stale, int32(k))
			}
		}
		stale = rapid.Permutation(stale).Draw(rt, "stale_order")
		changed := kept > 0 && rapid.Bool().Draw(rt, "changed")
		room := uint64(rapid.IntRange(0, 3000).Draw(rt, "room"))
		// plan is a planner of this plan, its cache holding the last plan.
		plan := func() *planner {
			c := &planCache{spans: slices.Clone(spans[:kept]), order: slices.Clone(stale)}
			if changed {
				c.spans[0].tokens++ // changed since: placed again
			}
			m := len(spans)
			lp := &l1Plan{c: c, spans: spans, vals: make([]spanValue, m), chosen: make([]bool, m), prevTail: c.spans}
			recent := c.recentValues(m)
			for k, sp := range lp.spans {
				v := recent[m-1-k]
				if sp.bare && !sp.summary {
					v *= questionWeight
				}
				lp.vals[k] = spanValue{den: v / float64(max(sp.tokens, densityFloorTokens)), val: v, tokens: sp.tokens, part: -1}
			}
			return &planner{s: &State{snap: &memoryv1.SessionSnapshot{}}, l1p: lp}
		}
		p := plan()
		lp := p.l1p
		m := len(spans)
		var want []int32
		parts := make([]Part, m)
		for k, sp := range lp.spans {
			parts[k] = Part{Kind: PartL1, Tokens: max(sp.tokens, 1), Value: lp.vals[k].val}
			if !sp.summary {
				want = append(want, int32(k))
			}
		}
		// Allocate's order of the parts (every part fits: the order is
		// the order they are taken in).
		slices.SortStableFunc(want, func(a, b int32) int {
			pa, pb := parts[a], parts[b]
			if c := cmp.Compare(pb.density(), pa.density()); c != 0 {
				return c
			}
			return cmp.Compare(pb.Value, pa.Value)
		})
		got := lp.plainOrder()
		if !lp.plainSorted(got, 0) {
			lp.sortPlain(got)
		}
		if !slices.Equal(got, want) {
			rt.Fatalf("plain order %v, want %v", got, want)
		}
		// What allocate chooses is what Allocate chooses (of the spans
		// that are not summaries, with their tokens).
		p = plan()
		p.allocate(room, [numPartKinds]uint64{})
		for k, sp := range spans {
			parts[k].Tokens = sp.tokens
			if sp.summary {
				parts[k].Value = 0
			}
		}
		chosen := make([]bool, m)
		for _, k := range Allocate(parts, room, [numPartKinds]uint64{}) {
			chosen[k] = true
		}
		if !slices.Equal(p.l1p.chosen, chosen) {
			rt.Fatalf("allocate chose %v, want %v", p.l1p.chosen, chosen)
		}
	})
}
