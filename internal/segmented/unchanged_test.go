package segmented

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/convgen"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// decisionDigests are the SHA-256 digests of every batch decided by
// TestDecisionsUnchanged, per session setting, as the decision made them
// before the candidates were prepared by the node and the plan was made
// incremental (commit a1f861e), then with other sessions' items of one
// sitting under one header (RecalledItem.continued, the day-then-session
// order), then with memory items naming their key by digest
// (MemoryItem.key_sha256; the context's memory message ids with it),
// then with the day marks of turns shown after text of another day
// (dated.go; the conversation is dated, undatedDigests pin it without its
// said times): the faster code must decide byte for byte the same. A change meant to
// change decisions updates them (AGENTMEM_DECISION_DIGESTS=1 prints them).
// They are taken with each ContextAssembled's why (the record of how the
// plan chose, added later) left out: recording it changed no decision;
// whyDigests pin the events whole, the why included.
var decisionDigests = []string{
	"3e8a417ad739a5ce568d593b23a98ccefca6808326ad06cabf5d39bd7eb311cb",
	"9b2f5d94d88f2fc0c962d4db17c227aafafb4fc6ce0e08d0c146a9fe4c95a33e",
	"cd2bbfdb348a5cbec95f784ee3c2c47f7143f970fa355521ce4183a2564f1792",
	"dfc05f98fcd6ea32101b33318255cf45462058accf5469b16f9b8b209158b94f",
}

// whyDigests are decisionDigests with the why of each ContextAssembled.
var whyDigests = []string{
	"34d1ec9ed3cf7da6e932e64835447bae840a5525308d02a4b2b136f15442ba5b",
	"7d1eb02b99ae0446368b0086f25351a9840b6c404156586a548db2bc6a59b825",
	"fd1e7e564c9690ff724f94d75ff47ca2a6ad917a9226a431b6925830010b8fdb",
	"c81e05aefb0654cab2f12ff87de34ae8357db051c1aff698e3215fb681236673",
}

// undatedDigests and undatedWhyDigests are decisionDigests and whyDigests
// of the same conversation with every said_unix_nano left out, as main
// decided it before the day marks the context adds to turns shown out of
// their day's order (dated.go): a session without said times decides as
// before.
var undatedDigests = []string{
	"79aaed8a5bcac37b00d5f8168438a56f3d6a2958085dd6e791fedaf18d2a36c1",
	"1eae473afc9ee804d5e6dd1b15e3caf9aeb6184712c04d87f4a8809d0da19e47",
	"9754270120d222b62b189daa51b2e1833809b7a2e8c89e306477b0fef6a5122d",
	"28dd5fd18eefdc8dd161d923aaabe2bd2e28dd4730bf3f196c9780c8a37d7f93",
}

var undatedWhyDigests = []string{
	"89e054b705fccc14e2eed869c076e52d55e2f6a17c728620a3808d15515f618a",
	"74a88b7d7c85fc29a06f50a7d0347a1c9715959e65ae3e16716bf0d7ae825329",
	"0c29861ae030d7002a6c6237c073bdd2d548c0de0936f57dcc61d3906f2a88e4",
	"687debf847433a234ef1af510ad739d4c660a6d302473ee64287ffa1b896edb8",
}

// withoutWhy is ev without its Assembled.why (ev itself when it has none).
func withoutWhy(ev proto.Message) proto.Message {
	ca, ok := ev.(*memoryv1.ContextAssembled)
	if !ok || ca.GetSections().GetWhy() == nil {
		return ev
	}
	c := proto.Clone(ca).(*memoryv1.ContextAssembled)
	c.Sections.Why = nil
	return c
}

// storedForm is ev as it was recorded before the session's own recalled
// messages were references: their texts in the event (read back from the
// messages offered to s), so that the digests compare what the context
// shows, not how the log keeps it.
func storedForm(s *State, ev proto.Message) proto.Message {
	ca, ok := ev.(*memoryv1.ContextAssembled)
	if !ok {
		return ev
	}
	c := proto.Clone(ca).(*memoryv1.ContextAssembled)
	c.Sections = storedSections(s, c.GetSections())
	return c
}

// storedSections is storedForm of sections sec (changed in place).
func storedSections(s *State, sec *memoryv1.Assembled) *memoryv1.Assembled {
	for _, r := range sec.GetRecalled() {
		if r.GetText() == "" && r.GetSessionId() == "" && r.GetSummaryId() == "" {
			r.Text, r.TextBytes, r.Trimmed = recText(s, r), 0, false
		}
	}
	return sec
}

// storedContext is s's context as it was sent before the session's own
// recalled messages were references (storedForm).
func storedContext(s *State) *memoryv1.ContextReply {
	snap := s.Snapshot()
	snap.Assembled = storedSections(s, proto.CloneOf(snap.GetAssembled()))
	return FromSnapshot(snap).Context()
}

// TestDecisionsUnchanged decides a long generated conversation under
// several budgets and assembly settings, with random candidates at each
// user message (own hits, other sessions' messages some of them long or
// edited, memory entries of every tier and of none, scored or not), once
// unprepared and once prepared as the node prepares them, and compares
// the digests of the batches with decisionDigests.
func TestDecisionsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	checkDecisionDigests(t, false, decisionDigests, whyDigests)
}

// TestUndatedDecisionsUnchanged is TestDecisionsUnchanged with the
// conversation's said times left out.
func TestUndatedDecisionsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	checkDecisionDigests(t, true, undatedDigests, undatedWhyDigests)
}

// checkDecisionDigests decides the conversation of TestDecisionsUnchanged
// (undated: without its said times) and compares the digests with
// decisionDigests and whyDigests.
func checkDecisionDigests(t *testing.T, undated bool, decisionDigests, whyDigests []string) {
	conv, err := convgen.Generate(convgen.Config{Seed: 11, Sittings: 2, MessagesPerSitting: 300, CheckpointsPerSitting: 1, StartUnixNano: 1_740_960_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	other, err := convgen.Generate(convgen.Config{Seed: 12, Sittings: 2, MessagesPerSitting: 300, CheckpointsPerSitting: 1, StartUnixNano: 1_700_000_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	settings := []struct {
		budget uint32
		asm    *memoryv1.AssemblyConfig
	}{
		{3000, nil},
		{6000, &memoryv1.AssemblyConfig{Recall: true, Memory: true, RecallPct: 10, MemoryPct: 90, TaskPct: 70, UserPct: 20, GlobalPct: 10}},
		{28500, &memoryv1.AssemblyConfig{Recall: true, Memory: true, RecallPct: 50, MemoryPct: 30}},
		{200000, nil},
	}
	for _, prepare := range []bool{false, true} {
		var got, gotWhy []string
		for si, set := range settings {
			rng := rand.New(rand.NewPCG(uint64(set.budget), 9))
			s := mustCreate(t, &memoryv1.CreateSessionRequest{SystemPrompt: conv.SystemPrompt, MaxContextTokens: set.budget, ReservedOutputTokens: 1000, UserId: "u1", Assembly: set.asm})
			memo := &PrepareMemo{}
			var stored []*memoryv1.Message
			h, hw := sha256.New(), sha256.New()
			for i, a := range conv.Appends {
				req := appendRequest(conv, a)
				for _, m := range req.Messages {
					if undated {
						m.SaidUnixNano = 0
					}
				}
				var c *Candidates
				if req.Messages[0].Role == memoryv1.Role_ROLE_USER {
					c = digestCandidates(rng, stored, other)
					offer(s, c)
					if prepare {
						c.Prepare(s.snap.GetSessionId(), env.Tokenizer, memo)
					}
				}
				evs, err := s.DecideAppendWith(req, c, env)
				if err != nil {
					fmt.Fprintf(h, "%d: %v\n", i, err)
					fmt.Fprintf(hw, "%d: %v\n", i, err)
					continue
				}
				for _, ev := range evs {
					ev = storedForm(s, ev)
					hw.Write(marshal(t, ev))
					h.Write(marshal(t, withoutWhy(ev)))
				}
				if err := s.Apply(Meta{CommandID: fmt.Sprint(i), Version: s.Version() + 1, Seq: s.LastSeq() + 1}, evs); err != nil {
					t.Fatal(err)
				}
				for _, ev := range evs {
					if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
						stored = append(stored, ma.Messages...)
					}
				}
			}
			h.Write(marshal(t, storedContext(s)))
			hw.Write(marshal(t, storedContext(s)))
			got = append(got, fmt.Sprintf("%x", h.Sum(nil)))
			gotWhy = append(gotWhy, fmt.Sprintf("%x", hw.Sum(nil)))
			if si < len(decisionDigests) && got[si] != decisionDigests[si] {
				t.Errorf("prepared %v, budget %d: the decisions differ from before", prepare, set.budget)
			}
			if si < len(whyDigests) && gotWhy[si] != whyDigests[si] {
				t.Errorf("prepared %v, budget %d: the recorded why differs from before", prepare, set.budget)
			}
		}
		if os.Getenv("AGENTMEM_DECISION_DIGESTS") != "" {
			t.Logf("digests: %q\nwhy digests: %q", got, gotWhy)
		}
	}
}

// digestCandidates draws the candidates of one user message.
func digestCandidates(rng *rand.Rand, stored []*memoryv1.Message, other *convgen.Conversation) *Candidates {
	c := &Candidates{}
	scored := rng.IntN(4) > 0
	withSessions := rng.IntN(3) > 0
	for range rng.IntN(120) {
		var m *memoryv1.Message
		sid := ""
		switch k := rng.IntN(10); {
		case k < 6 && len(stored) > 0:
			m = stored[rng.IntN(len(stored))]
		case withSessions:
			j := rng.IntN(len(other.Messages))
			om := other.Messages[j]
			m = &memoryv1.Message{Id: om.ID(), Seq: uint64(j + 1), Role: om.Role, Content: om.Content, ToolCalls: om.ToolCalls,
				ToolCallId: om.ToolCallID, SaidUnixNano: om.UnixNano, Turn: uint32(j/4 + 1)}
			if rng.IntN(8) == 0 {
				m.Content += " (edited)"
			}
			if rng.IntN(10) == 0 {
				m.Content = strings.Repeat(m.Content+" ", 40) // trimmed to maxRecalledItemTokens
			}
			sid = fmt.Sprintf("other-%d", rng.IntN(3))
		default:
			continue
		}
		c.Recall = append(c.Recall, m)
		c.RecallSessions = append(c.RecallSessions, sid)
		c.RecallScores = append(c.RecallScores, float64(rng.IntN(30)))
	}
	if !scored {
		c.RecallScores = nil
	}
	if !withSessions {
		c.RecallSessions = nil
	}
	tiers := []struct{ scope, tier string }{{"agent:a1", TierTask}, {"session:s1", TierTask}, {"user:u1", TierUser}, {"global", TierGlobal}, {"x", "bogus"}, {"user:u1", "bogus"}}
	for range rng.IntN(40) {
		tr := tiers[rng.IntN(len(tiers))]
		text := other.Messages[rng.IntN(len(other.Messages))].Content
		for range rng.IntN(6) {
			text += " " + other.Messages[rng.IntN(len(other.Messages))].Content
		}
		c.Memory = append(c.Memory, &memoryv1.MemoryItem{Scope: tr.scope, Key: fmt.Sprintf("k%d", rng.IntN(12)),
			Version: uint64(rng.IntN(3) + 1), Tier: tr.tier, Text: text})
		c.MemoryScores = append(c.MemoryScores, float64(rng.IntN(3)))
	}
	if rng.IntN(4) == 0 {
		c.MemoryScores = nil
	}
	return c
}
