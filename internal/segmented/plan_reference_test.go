package segmented

import (
	"cmp"
	"math"
	"slices"

	"github.com/agentmem/agentmem/internal/facts"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
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
	p := &planner{s: s, tok: env.Tokenizer, l1: s.snap.GetL1(), swapPart: map[uint64]int{}, query: facts.ContentWords(m.GetContent())}
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
	for _, i := range chosen {
		r := p.refs[i]
		switch {
		case r.recalled != nil:
			out.Recalled = append(out.Recalled, r.recalled)
		case r.memory != nil:
			out.Memory = append(out.Memory, r.memory)
		case r.l2 >= 0:
			out.L2Ids = append(out.L2Ids, s.snap.L2[r.l2].GetId())
		default:
			for _, e := range p.l1[r.l1From:r.l1To] {
				first, _ := entryRange(e)
				out.L1Seqs = append(out.L1Seqs, first)
			}
		}
	}
	slices.SortFunc(out.Recalled, func(x, y *memoryv1.RecalledItem) int { return cmp.Compare(x.Seq, y.Seq) })
	slices.Sort(out.L1Seqs)
	out.Memory = byTier(out.Memory)
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
		lp.part = append(lp.part, int32(p.add(part, partRef{l1From: int(sp.from), l1To: int(sp.to), l2: -1})))
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
	return summaryBase + summaryWeight*float64(shared(p.query, facts.ContentWords(text)))/float64(len(p.query))
}
