package segmented

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/facts"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

// planReference is the plan as the allocation was first written, kept as
// the reference of the incremental planner (TestPlanMatchesReference): the
// tool-call groups and the tail found from the whole L1, a Part for every
// L1 span, every summary's content words read again, and every Part sorted
// by Allocate. It shares with plan what values the candidates (addHits,
// offer, addMemory), so the two differ only in how they treat the
// session's own layers.
func (s *State) planReference(m *memoryv1.Message, c *Candidates, env Env) *memoryv1.Assembled {
	a := s.Assembly()
	p := &planner{s: s, tok: env.Tokenizer, rawTok: env.Tokenizer, l1: s.snap.GetL1(), swapPart: map[uint64]int{}, earlierPart: map[earlierRef]int{}, query: sortedKeys(facts.ContentWords(m.GetContent()))}
	p.tail = p.tailStartReference()
	p.addL1Reference()
	p.addL2Reference()
	if c != nil {
		if a.GetRecallPct() > 0 {
			p.addHits(c)
		}
		if a.GetMemoryPct() > 0 {
			p.addMemory(c, a)
		}
	}
	out := &memoryv1.Assembled{ForMessageId: m.GetId(), ForSeq: m.GetSeq(), Planned: true, TailSeq: s.snap.GetNextMessageSeq()}
	if p.tail < len(p.l1) {
		out.TailSeq, _ = entryRange(p.l1[p.tail])
	}
	var caps [numPartKinds]uint64
	caps[PartRecalled] = min(s.Budget()*uint64(a.GetRecallPct())/100, MaxRecalledTokens)
	caps[PartMemory] = s.sectionCap(a.GetMemoryPct())
	fixed := max(s.tok.rom, s.tok.pendingRom) + s.tok.kernel + s.tok.promoted
	for _, e := range p.l1[p.tail:] {
		fixed += uint64(entryTokens(e))
	}
	room := s.Budget() - min(s.Budget(), fixed)
	chosen := Allocate(p.parts, room, caps)
	if p.showsAll(chosen) {
		return &memoryv1.Assembled{}
	}
	from := map[*memoryv1.MemoryItem]int{} // each memory item's index in p.mems
	for _, i := range chosen {
		r := p.refs[i]
		switch {
		case r.rec != 0:
			out.Recalled = append(out.Recalled, p.recs[r.rec-1].item())
		case r.mem != 0:
			x := p.mems[r.mem-1].item()
			from[x] = int(r.mem - 1)
			out.Memory = append(out.Memory, x)
		case r.l2 >= 0:
			out.L2Ids = append(out.L2Ids, s.snap.L2[r.l2].GetId())
		default:
			for _, e := range p.l1[r.l1From:r.l1To] {
				first, _ := entryRange(e)
				out.L1Seqs = append(out.L1Seqs, first)
			}
		}
	}
	slices.SortFunc(out.Recalled, compareRecalled)
	out.Recalled = p.continueEarlier(out.Recalled, chosen)
	slices.Sort(out.L1Seqs)
	out.Memory = byTier(out.Memory)
	p.memOut = make([]int32, len(p.mems))
	for j := range p.memOut {
		p.memOut[j] = -1
	}
	for k, x := range out.Memory {
		p.memOut[from[x]] = int32(k)
	}
	out.Why = p.why(out, room, caps)
	return out
}

func (p *planner) tailStartReference() int {
	l1 := p.l1
	start := max(0, len(l1)-MinTailMessages)
	limit := p.s.Budget() * MaxTailPct / 100
	var tokens uint64
	for _, e := range l1[start:] {
		tokens += uint64(entryTokens(e))
	}
	for latest := latestUser(l1); start < latest && tokens > limit; start++ {
		tokens -= uint64(entryTokens(l1[start]))
	}
	g := toolGroups(l1)
	for start > 0 && start < len(l1) && g.owner[start] >= 0 && g.owner[start] < start {
		start = g.owner[start]
	}
	return start
}

// addL1Reference makes a part of every span (an L1 entry, or a tool call
// with its results) older than the tail, valued by recency; raiseL1 finds
// them through p.l1p, where every span is a part.
func (p *planner) addL1Reference() {
	g := toolGroups(p.l1)
	lp := &l1Plan{}
	p.l1p = lp
	for i := 0; i < p.tail; {
		end := i + 1
		if g.owner[i] == i {
			end = min(max(end, g.last[i]+1), p.tail)
		}
		lp.spans = append(lp.spans, l1Span{from: int32(i), to: int32(end)})
		i = end
	}
	for k, sp := range lp.spans {
		d := float64(len(lp.spans) - 1 - k)
		var tokens uint64
		for _, e := range p.l1[sp.from:sp.to] {
			tokens += uint64(entryTokens(e))
		}
		part := Part{Kind: PartL1, Tokens: tokens, Value: recentWeight * math.Exp2(-d/recentHalfLife)}
		first := p.l1[sp.from]
		if sum := first.GetSummary(); sum != nil {
			part.Kind = PartSummary
			part.Value = max(part.Value, p.summaryValueReference(sum.GetText()))
		} else if BareQuestion(first.GetMessage()) {
			part.Value *= questionWeight
		}
		lp.vals = append(lp.vals, spanValue{part: int32(p.add(part, partRef{l1From: int(sp.from), l1To: int(sp.to), l2: -1}))})
	}
}

func (p *planner) addL2Reference() {
	for i, sum := range p.s.snap.GetL2() {
		p.add(Part{Kind: PartSummary, Tokens: uint64(sum.GetTokens()), Value: p.summaryValueReference(sum.GetText())}, partRef{l2: i})
	}
}

func (p *planner) summaryValueReference(text string) float64 {
	if len(p.query) == 0 {
		return summaryBase
	}
	return summaryBase + summaryWeight*float64(sharedWords(p.query, facts.ContentWords(text)))/float64(len(p.query))
}

// chooseMemoryReference is chooseMemory as first written (maps of tiers and
// of the scope and key seen), the reference of TestChooseMemoryMatchesReference.
func chooseMemoryReference(cands []*memoryv1.MemoryItem, a *memoryv1.AssemblyConfig, capTokens uint64, tok Tokenizer) []*memoryv1.MemoryItem {
	tierCap := map[string]uint64{
		TierTask:   capTokens * uint64(a.GetTaskPct()) / 100,
		TierUser:   capTokens * uint64(a.GetUserPct()) / 100,
		TierGlobal: capTokens * uint64(a.GetGlobalPct()) / 100,
	}
	var uniq []*memoryv1.MemoryItem
	seen := map[string]bool{}
	for _, c := range cands[:min(len(cands), MaxMemoryCandidates)] {
		id := c.GetScope() + "\x00" + c.GetKey()
		if _, ok := tierCap[c.GetTier()]; !ok || seen[id] {
			continue
		}
		seen[id] = true
		uniq = append(uniq, c)
	}
	taken := make([]*memoryv1.MemoryItem, len(uniq))
	tierUsed := map[string]uint64{}
	var used uint64
	take := func(i int, room uint64) {
		c := uniq[i]
		full := memoryText(c)
		text, tokens, ok := fitItem(tok, full, room)
		if !ok {
			return
		}
		// The log keeps which text, not the text (MemoryItem.text_bytes).
		n, trimmed := len(text), false
		if text != full {
			n, trimmed = len(strings.TrimSuffix(text, "…")), true
		}
		taken[i] = &memoryv1.MemoryItem{Scope: c.GetScope(), KeySha256: KeySum(c.GetKey()), Version: c.GetVersion(), TextBytes: uint32(n), Trimmed: trimmed, Tokens: tokens, Tier: c.GetTier()}
		tierUsed[c.GetTier()] += uint64(tokens)
		used += uint64(tokens)
	}
	for i, c := range uniq {
		if limit := tierCap[c.GetTier()]; tierUsed[c.GetTier()] < limit {
			take(i, min(limit-tierUsed[c.GetTier()], capTokens-used))
		}
	}
	for i := range uniq {
		if taken[i] == nil && used < capTokens {
			take(i, capTokens-used)
		}
	}
	var out []*memoryv1.MemoryItem
	for _, tier := range []string{TierTask, TierUser, TierGlobal} {
		for _, m := range taken {
			if m != nil && m.Tier == tier {
				out = append(out, m)
			}
		}
	}
	return out
}

func TestChooseMemoryMatchesReference(t *testing.T) {
	tok := tokenizerT(t)
	rapid.Check(t, func(rt *rapid.T) {
		var cands []*memoryv1.MemoryItem
		for range rapid.IntRange(0, 70).Draw(rt, "n") {
			cands = append(cands, &memoryv1.MemoryItem{
				Scope:   rapid.SampledFrom([]string{"agent:a1", "user:u1", "global", "a\x00b", "a"}).Draw(rt, "scope"),
				Key:     rapid.SampledFrom([]string{"k1", "k2", "b", "b\x00b", "k3"}).Draw(rt, "key"),
				Version: uint64(rapid.IntRange(1, 3).Draw(rt, "version")),
				Tier:    rapid.SampledFrom([]string{TierTask, TierUser, TierGlobal, "bogus"}).Draw(rt, "tier"),
				Text:    words(rt, "text", 1, rapid.SampledFrom([]int{5, 40, 300}).Draw(rt, "size")),
			})
		}
		a := &memoryv1.AssemblyConfig{TaskPct: 40, UserPct: 40, GlobalPct: 20}
		if rapid.Bool().Draw(rt, "split") {
			a = &memoryv1.AssemblyConfig{TaskPct: 10, UserPct: 0, GlobalPct: 90}
		}
		capTokens := uint64(rapid.IntRange(0, 2000).Draw(rt, "cap"))
		want := chooseMemoryReference(cands, a, capTokens, tok)
		got := chooseMemory(cands, nil, a, capTokens, tok)
		if !slices.EqualFunc(want, got, func(x, y *memoryv1.MemoryItem) bool { return proto.Equal(x, y) }) {
			rt.Fatalf("chooseMemory %v, reference %v", got, want)
		}
	})
}
