package segmented

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentmem/agentmem/internal/convgen"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

// TestPreparedMatchesUnprepared decides a long generated conversation
// twice in lockstep: the reference recomputes everything at each user
// message (planReference, candidates unprepared: every text rendered and
// counted by the decision), the fast path decides with the incremental
// planner and the candidates prepared as the node prepares them (through
// one PrepareMemo kept over the whole run). The candidates are drawn at
// random at each user message: the session's own messages (in L1, in the
// tail, in the swap), messages of other sessions (some of them the same
// seq with another text, as a memo must not confuse), memory entries of
// every tier (a few with a new value under a version already seen).
// Every batch must be byte-identical.
func TestPreparedMatchesUnprepared(t *testing.T) {
	messages := 1200
	if testing.Short() {
		messages = 500
	}
	conv, err := convgen.Generate(convgen.Config{Seed: 11, Sittings: messages/300 + 1, MessagesPerSitting: 300,
		CheckpointsPerSitting: 1, StartUnixNano: 1_740_960_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	other, err := convgen.Generate(convgen.Config{Seed: 12, Sittings: 2, MessagesPerSitting: 300, CheckpointsPerSitting: 1, StartUnixNano: 1_700_000_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	for _, budget := range []uint32{6000, 28500} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(budget), 5))
			l := newLockstep(t, &memoryv1.CreateSessionRequest{SystemPrompt: conv.SystemPrompt, MaxContextTokens: budget, ReservedOutputTokens: 1000,
				UserId: "u1", Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, RecallPct: 50, MemoryPct: 30}})
			memo := &PrepareMemo{}
			var stored []*memoryv1.Message
			plans := 0
			for i, a := range conv.Appends {
				if a.Start >= messages {
					break
				}
				req := appendRequest(conv, a)
				var raw, prep *Candidates
				if req.Messages[0].Role == memoryv1.Role_ROLE_USER {
					raw = randomCandidates(rng, stored, other)
					offer(l.ref, raw)
					offer(l.inc, raw)
					c := *raw
					prep = &c
					prep.Prepare(l.inc.snap.GetSessionId(), env.Tokenizer, memo)
				}
				cmd := fmt.Sprintf("append-%d", i)
				want, werr := l.ref.DecideAppendWith(req, raw, env)
				got, gerr := l.inc.DecideAppendWith(req, prep, env)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("%s: unprepared %v, prepared %v", cmd, werr, gerr)
				}
				if werr != nil {
					continue
				}
				sameEvents(t, cmd, want, got)
				if assembledEvent(got) != nil {
					plans++
				}
				meta := Meta{CommandID: cmd, Version: l.ref.Version() + 1, Seq: l.ref.LastSeq() + 1}
				if err := l.ref.Apply(meta, want); err != nil {
					t.Fatal(err)
				}
				if err := l.inc.Apply(meta, got); err != nil {
					t.Fatal(err)
				}
				for _, ev := range got {
					if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
						stored = append(stored, ma.Messages...)
					}
				}
			}
			if plans < 50 {
				t.Fatalf("only %d plans compared", plans)
			}
			t.Logf("%d plans compared; at the end %d L1 entries, %d L2 summaries", plans, len(l.inc.snap.GetL1()), len(l.inc.snap.GetL2()))
		})
	}
}

// randomCandidates draws the candidates of one user message: hits among
// the session's stored messages and another session's (other), scored or
// not, and memory entries.
func randomCandidates(rng *rand.Rand, stored []*memoryv1.Message, other *convgen.Conversation) *Candidates {
	c := &Candidates{}
	scored := rng.IntN(4) > 0
	withSessions := rng.IntN(3) > 0
	for range rng.IntN(80) {
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
				// The same seq with another text (a memo keyed by the
				// source must see it).
				m.Content += " (edited)"
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
	tiers := []struct{ scope, tier string }{{"agent:a1", TierTask}, {"session:s1", TierTask}, {"user:u1", TierUser}, {"global", TierGlobal}, {"x", "bogus"}}
	for range rng.IntN(30) {
		tr := tiers[rng.IntN(len(tiers))]
		n := rng.IntN(len(other.Messages))
		text := other.Messages[n].Content
		for range rng.IntN(3) {
			text += " " + other.Messages[rng.IntN(len(other.Messages))].Content
		}
		c.Memory = append(c.Memory, &memoryv1.MemoryItem{Scope: tr.scope, Key: fmt.Sprintf("k%d", rng.IntN(12)),
			Version: uint64(rng.IntN(3) + 1), Tier: tr.tier, Text: text})
		c.MemoryScores = append(c.MemoryScores, float64(rng.IntN(3)))
	}
	return c
}

// TestPrepareMemoChecksTheSource: a memo hit is used only for the same
// source; a message or entry changed under the same key is prepared again.
func TestPrepareMemoChecksTheSource(t *testing.T) {
	tok := tokenizerT(t)
	memo := &PrepareMemo{}
	m := &memoryv1.Message{Id: "m1", Seq: 1, Role: memoryv1.Role_ROLE_USER, Content: "short"}
	long := proto.Clone(m).(*memoryv1.Message)
	long.Content = "a much longer text than the first one, with many more tokens in it"
	e := &memoryv1.MemoryItem{Scope: "user:u1", Key: "k", Version: 1, Tier: TierUser, Text: "one"}
	e2 := proto.Clone(e).(*memoryv1.MemoryItem)
	e2.Text = "one two three four five six seven"
	for _, form := range []itemForm{formRecalled, formEarlier} {
		for range 2 {
			for _, x := range []*memoryv1.Message{m, long} {
				c := &Candidates{Recall: []*memoryv1.Message{x}, Memory: []*memoryv1.MemoryItem{e, e2}}
				if form == formEarlier {
					c.RecallSessions = []string{"other"}
				}
				c.Prepare("s", tok, memo)
				if want := prepareMessage(tok, form, x); c.prep.recall[0] != want {
					t.Fatalf("%v: prepared %+v, want %+v", form, c.prep.recall[0], want)
				}
				for i, it := range []*memoryv1.MemoryItem{e, e2} {
					if got, want := c.prep.memory[i].tokens, textTokens(tok, memoryText(it)); got != want {
						t.Fatalf("entry %q: %d tokens, want %d", it.Text, got, want)
					}
				}
			}
		}
	}
}

// TestPrepareMemoConcurrent prepares from several goroutines through one
// memo (the node's appends of different sessions): every result is the
// item prepared without a memo.
func TestPrepareMemoConcurrent(t *testing.T) {
	tok := tokenizerT(t)
	memo := &PrepareMemo{}
	var msgs []*memoryv1.Message
	for i := range 200 {
		msgs = append(msgs, &memoryv1.Message{Id: fmt.Sprintf("m%d", i), Seq: uint64(i%50 + 1), Role: memoryv1.Role_ROLE_ASSISTANT,
			Content: fmt.Sprintf("The invoice %d for region %d was paid on day %d.", i, i%7, i%31)})
	}
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			for r := range 20 {
				c := &Candidates{Recall: msgs}
				c.Prepare(fmt.Sprintf("s%d", (g+r)%3), tok, memo)
				for i, m := range msgs {
					if want := prepareMessage(tok, formRecalled, m); c.prep.recall[i] != want {
						done <- fmt.Errorf("message %d: prepared %+v, want %+v", i, c.prep.recall[i], want)
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpansKeptMatchRebuilt: the spans a plan keeps from the last one
// (planCache.spansTo) are the spans made from scratch, over a long
// conversation with decisions rolled back in between.
func TestSpansKeptMatchRebuilt(t *testing.T) {
	conv, err := convgen.Generate(convgen.Config{Seed: 5, Sittings: 2, MessagesPerSitting: 300, CheckpointsPerSitting: 1, StartUnixNano: 1_740_960_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	for _, budget := range []uint32{3000, 12000} {
		s := mustCreate(t, &memoryv1.CreateSessionRequest{SystemPrompt: conv.SystemPrompt, MaxContextTokens: budget, ReservedOutputTokens: 500})
		plans := 0
		for i, a := range conv.Appends {
			req := appendRequest(conv, a)
			if i%5 == 0 {
				// Decided, not stored: the cache moves on and back.
				_, _ = s.DecideAppendWith(req, &Candidates{}, env)
			}
			evs, err := s.DecideAppendWith(req, &Candidates{}, env)
			if err != nil {
				t.Fatal(err)
			}
			if c := s.plans; c != nil && len(c.spans) > 0 {
				fresh, _, _ := (&planCache{ents: slices.Clone(c.ents)}).spansTo(c.spansTail)
				if !slices.Equal(c.spans, fresh) {
					t.Fatalf("budget %d, append %d: kept spans differ from the spans made again", budget, i)
				}
				plans++
			}
			commit(t, s, fmt.Sprint("append-", i), evs)
		}
		if plans < 100 {
			t.Fatalf("budget %d: %d plans checked", budget, plans)
		}
	}
}

// TestSameEntryMatchesJoinedKeys: sameEntry is scope+"\x00"+key equality,
// 0x00 bytes inside scopes and keys included.
func TestSameEntryMatchesJoinedKeys(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		part := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', 0}), 0, 4, -1)
		a := &memoryv1.MemoryItem{Scope: part.Draw(rt, "as"), Key: part.Draw(rt, "ak")}
		b := &memoryv1.MemoryItem{Scope: part.Draw(rt, "bs"), Key: part.Draw(rt, "bk")}
		if got, want := sameEntry(a, b), a.Scope+"\x00"+a.Key == b.Scope+"\x00"+b.Key; got != want {
			rt.Fatalf("sameEntry(%q/%q, %q/%q) = %v, want %v", a.Scope, a.Key, b.Scope, b.Key, got, want)
		}
	})
}

// TestMemoryFirstsNamesTheFirstCandidateOfAnEntry: memoryFirsts gives each
// candidate the first candidate of the same scope+"\x00"+key.
func TestMemoryFirstsNamesTheFirstCandidateOfAnEntry(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		part := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 0}), 0, 3, -1)
		n := rapid.IntRange(0, MaxMemoryCandidates+3).Draw(rt, "n")
		var cands []*memoryv1.MemoryItem
		for i := range n {
			cands = append(cands, &memoryv1.MemoryItem{Scope: part.Draw(rt, fmt.Sprint("s", i)), Key: part.Draw(rt, fmt.Sprint("k", i))})
		}
		first := memoryFirsts(cands, nil)
		if len(first) != min(n, MaxMemoryCandidates) {
			rt.Fatalf("%d firsts of %d candidates", len(first), n)
		}
		for r, j := range first {
			key := func(m *memoryv1.MemoryItem) string { return m.Scope + "\x00" + m.Key }
			want := slices.IndexFunc(cands, func(m *memoryv1.MemoryItem) bool { return key(m) == key(cands[r]) })
			if int(j) != want {
				rt.Fatalf("first[%d] = %d, want %d", r, j, want)
			}
		}
	})
}
