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
// (MemoryItem.key_sha256; the context's memory message ids with it): the
// faster code must decide byte for byte the same. A change meant to
// change decisions updates them (AGENTMEM_DECISION_DIGESTS=1 prints them).
// They are taken with each ContextAssembled's why (the record of how the
// plan chose, added later) left out: recording it changed no decision;
// whyDigests pin the events whole, the why included.
var decisionDigests = []string{
	"f29ab804d7b29f2c7965a6572951501b6951ee3e5457400c029c706e87932bf4",
	"028edc5e1d2971f4938988f67a838c7b7b0df56f8da4c822ec254a5330f19ccc",
	"39850ad92b944a91378737581552ca186bd3c72fcb12e521778796b8753808a1",
	"5402522ef472ded598bee33931effd54cf016d7abb7178f5159a909c09edbdc0",
}

// whyDigests are decisionDigests with the why of each ContextAssembled.
var whyDigests = []string{
	"4fa92272c5875baffd2e71274f1c19b63e001247da0c40d7e758de1e56062698",
	"3118fd0e61c45c50c027d79d0ca213c3122a92b4f8f619f55542e0742530996d",
	"9786dec9369ddace1e93cfe88d5caf210ff4910b142a97deae6ffae4c971d825",
	"8e37c7e3a48f93f54f39ad65fe2b90694150cb22f02c8f2541d31dcb68a58d27",
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
			h.Write(marshal(t, s.Context()))
			hw.Write(marshal(t, s.Context()))
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
