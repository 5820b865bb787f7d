package segmented

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/cpustat"
	"github.com/agentmem/agentmem/internal/facts"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// decideFixture is a session grown from a generated conversation
// (internal/convgen: user messages, replies with tool calls and bulky
// results), the next user message of the conversation, and the candidates
// a node would offer for it: recall hits over every message stored so far
// (in L1 or in the swap) ranked by the content words they share with the
// message, and memory entries of every tier. engine is the same session
// without the assembler.
type decideFixture struct {
	asm, engine *State
	// reqs are the next user messages of the conversation (each a possible
	// next message of the session), cands their candidates.
	reqs  []*memoryv1.AppendRequest
	cands []*Candidates
	// raw are the same candidates unprepared (the decision renders and
	// counts them); cands are prepared as the node prepares them.
	raw []*Candidates
}

// decideQueries is how many different user messages a benchmark cycles
// through: candidates change from one message to the next, as they do in
// a conversation.
const decideQueries = 16

// newDecideFixture appends the first (about) messages of a generated
// conversation to a session of maxContext tokens, stopping before a user
// message; the next decideQueries user messages each get nHits recall
// candidates and nMemory memory candidates.
func newDecideFixture(b *testing.B, messages int, maxContext uint32, nHits, nMemory int) *decideFixture {
	b.Helper()
	conv, err := convgen.Generate(convgen.Config{Seed: 7, Sittings: messages/300 + 2, MessagesPerSitting: 300,
		CheckpointsPerSitting: 1, StartUnixNano: 1_740_960_000_000_000_000})
	if err != nil {
		b.Fatal(err)
	}
	f := &decideFixture{}
	env := testEnv(b)
	for _, asm := range []bool{true, false} {
		req := &memoryv1.CreateSessionRequest{SystemPrompt: conv.SystemPrompt, MaxContextTokens: maxContext, ReservedOutputTokens: 2000}
		if !asm {
			req.Assembly = &memoryv1.AssemblyConfig{}
		}
		s := mustCreate(b, req)
		done := false
		for _, a := range conv.Appends {
			first := conv.Messages[a.Start]
			done = done || (a.Start >= messages && first.Role == memoryv1.Role_ROLE_USER)
			if done {
				if asm && first.Role == memoryv1.Role_ROLE_USER && len(f.reqs) < decideQueries {
					f.reqs = append(f.reqs, appendRequest(conv, a))
				}
				continue
			}
			evs, err := s.DecideAppend(appendRequest(conv, a), env)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Apply(Meta{Version: s.Version() + 1, Seq: s.LastSeq() + 1}, evs); err != nil {
				b.Fatal(err)
			}
		}
		if asm {
			f.asm = s
		} else {
			f.engine = s
		}
	}
	stored := &storedWords{}
	for i, cm := range conv.Messages[:f.asm.snap.GetNextMessageSeq()-1] {
		// The stored message (seq i+1): what the projection's search returns.
		stored.add(&memoryv1.Message{Id: cm.ID(), Seq: uint64(i + 1), Role: cm.Role, Content: cm.Content, ToolCalls: cm.ToolCalls,
			ToolCallId: cm.ToolCallID, Tokens: messageTokens(env.Tokenizer, cm.Content, cm.ToolCalls), SaidUnixNano: cm.UnixNano})
	}
	memo := &PrepareMemo{}
	for qi, req := range f.reqs {
		c := benchCandidates(conv, stored, req.Messages[0].Content, qi, nHits, nMemory)
		raw := *c
		f.raw = append(f.raw, &raw)
		c.Prepare(f.asm.snap.GetSessionId(), env.Tokenizer, memo)
		f.cands = append(f.cands, c)
	}
	return f
}

// storedWords are the messages of a session as stored, with their
// content words.
type storedWords struct {
	msgs  []*memoryv1.Message
	words []map[string]bool
}

func (s *storedWords) add(ms ...*memoryv1.Message) {
	for _, m := range ms {
		s.msgs = append(s.msgs, m)
		s.words = append(s.words, facts.ContentWords(m.GetContent()))
	}
}

// benchCandidates ranks the stored messages by the content words they
// share with the user message q (the projection's search, roughly), offers
// them as the node does, keeps nHits, and adds nMemory scope entries of
// every tier, half of them matching.
func benchCandidates(conv *convgen.Conversation, stored *storedWords, q string, qi, nHits, nMemory int) *Candidates {
	words := facts.ContentWords(q)
	type hit struct {
		m     *memoryv1.Message
		score float64
	}
	var hits []hit
	for i, m := range stored.msgs {
		if k := shared(words, stored.words[i]); k > 0 {
			hits = append(hits, hit{m, float64(k) + float64(m.Seq)/1e6})
		}
	}
	slices.SortStableFunc(hits, func(x, y hit) int { return cmp.Compare(y.score, x.score) })
	var msgs []*memoryv1.Message
	var scores []float64
	for _, h := range hits[:min(len(hits), RecallSearched)] {
		msgs, scores = append(msgs, h.m), append(scores, h.score)
	}
	msgs, scores = OfferRecall(msgs, scores)
	c := &Candidates{Recall: msgs[:min(len(msgs), nHits)], RecallScores: scores[:min(len(scores), nHits)]}
	tiers := []struct{ scope, tier string }{{"agent:a1", TierTask}, {"session:s1", TierTask}, {"user:u1", TierUser}, {"project:p1", TierUser}, {"global", TierGlobal}}
	for i := range nMemory {
		t := tiers[i%len(tiers)]
		c.Memory = append(c.Memory, &memoryv1.MemoryItem{Scope: t.scope, Key: fmt.Sprintf("k%d", i+qi), Version: uint64(i%3 + 1), Tier: t.tier,
			Text: conv.Messages[((i+qi)*37)%len(conv.Messages)].Content})
		score := 0.0
		if i < nMemory/2 {
			score = float64(nMemory - i)
		}
		c.MemoryScores = append(c.MemoryScores, score)
	}
	return c
}

func appendRequest(conv *convgen.Conversation, a convgen.Span) *memoryv1.AppendRequest {
	req := &memoryv1.AppendRequest{}
	for j := a.Start; j < a.End; j++ {
		req.Messages = append(req.Messages, conv.Messages[j].Input())
	}
	return req
}

// BenchmarkDecideAppendAssembled decides one user message on sessions of
// growing length with the context assembler on and realistic candidates,
// prepared as the node prepares them (assembled: 16 different messages in
// turn; assembled-repeat: one message again and again; unprepared: the 16
// with the texts rendered and counted by the decision, as before the node
// prepared them), beside the same decision without the assembler
// (engine). cpu-µs/op is the process CPU per decision (garbage collection
// included), which a busy machine inflates less than ns/op:
//
//	go test -run '^$' -bench DecideAppendAssembled -benchmem ./internal/segmented/
//
// ctx650: 1,500 messages under a 28.5k budget, about 650 of them in L1
// (compressed along the way, L2 and swap behind);
// long5000: 5,000 messages under a 32k budget (compressed); l1_5000: 5,000
// messages all verbatim in L1 (a large budget), the worst case of a cost
// that grows with L1.
func BenchmarkDecideAppendAssembled(b *testing.B) {
	for _, sh := range []struct {
		name       string
		messages   int
		maxContext uint32
	}{
		{"ctx650", 1500, 28500},
		{"long5000", 5000, 32000},
		{"l1_5000", 5000, 600000},
	} {
		b.Run(sh.name, func(b *testing.B) {
			f := newDecideFixture(b, sh.messages, sh.maxContext, 45, 20)
			env := testEnv(b)
			b.Run("assembled", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				cpu := cpustat.Start()
				for b.Loop() {
					if _, err := f.asm.DecideAppendWith(f.reqs[i%len(f.reqs)], f.cands[i%len(f.reqs)], env); err != nil {
						b.Fatal(err)
					}
					i++
				}
				cpu.Report(b, b.N)
				b.ReportMetric(float64(len(f.asm.snap.GetL1())), "l1")
				b.ReportMetric(float64(len(f.asm.snap.GetL2())), "l2")
				b.ReportMetric(float64(len(f.cands[0].Recall)), "hits")
				b.ReportMetric(assembledEventBytes(b, f, env), "event-B")
			})
			b.Run("assembled-repeat", func(b *testing.B) {
				// The same message again and again: its candidates' texts
				// are counted once.
				b.ReportAllocs()
				cpu := cpustat.Start()
				for b.Loop() {
					if _, err := f.asm.DecideAppendWith(f.reqs[0], f.cands[0], env); err != nil {
						b.Fatal(err)
					}
				}
				cpu.Report(b, b.N)
			})
			b.Run("unprepared", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				cpu := cpustat.Start()
				for b.Loop() {
					if _, err := f.asm.DecideAppendWith(f.reqs[i%len(f.reqs)], f.raw[i%len(f.reqs)], env); err != nil {
						b.Fatal(err)
					}
					i++
				}
				cpu.Report(b, b.N)
			})
			b.Run("prepare", func(b *testing.B) {
				// The node's share: the 16 candidate sets prepared in
				// turn through a warm memo.
				b.ReportAllocs()
				memo := &PrepareMemo{}
				id := f.asm.snap.GetSessionId()
				i := 0
				cpu := cpustat.Start()
				for b.Loop() {
					c := *f.raw[i%len(f.raw)]
					c.Prepare(id, env.Tokenizer, memo)
					i++
				}
				cpu.Report(b, b.N)
			})
			b.Run("engine", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				cpu := cpustat.Start()
				for b.Loop() {
					if _, err := f.engine.DecideAppend(f.reqs[i%len(f.reqs)], env); err != nil {
						b.Fatal(err)
					}
					i++
				}
				cpu.Report(b, b.N)
				b.ReportMetric(float64(len(f.engine.snap.GetL1())), "l1")
			})
		})
	}
}

// assembledEventBytes is the mean size of the ContextAssembled event of
// the fixture's 16 decisions (what each user message adds to the log for
// the sections and the plan).
func assembledEventBytes(b *testing.B, f *decideFixture, env Env) float64 {
	var size, n int
	for i, req := range f.reqs {
		evs, err := f.asm.DecideAppendWith(req, f.cands[i], env)
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range evs {
			if ca, ok := ev.(*memoryv1.ContextAssembled); ok {
				size += proto.Size(ca)
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(size) / float64(n)
}
