package segmented

import (
	"cmp"
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Why an item is in the context: the plan records, beside the sections it
// chose (Assembled.why), each chosen item's score and rank among its
// section's candidates, the room and the sections' caps, and the best
// candidates it left out with their score and the reason. Replay never
// plans again, so an inspector reading the log learns why from the event
// alone. The record holds references and numbers only (a left-out memory
// entry by the SHA-256 of its key): erasing a source leaves no text of it.

// MaxLeftOut bounds the left-out candidates recorded per section (the best
// ones): the event grows by a few hundred bytes at most.
const MaxLeftOut = 8

// sectionCand is one candidate of a section as the why ranks it.
type sectionCand struct {
	part int // its part (-1: a memory candidate chooseMemory left out)
	rec  int // p.recs index (-1: none)
	mem  int // p.mems index, or memCands index when part is -1 (-1: none)
	val  float64
	den  float64
	tok  uint64
}

// why records how the allocation chose out's sections: room is what it
// could fill, caps the sections' caps. It reads the planner's parts, so it
// runs once the sections are final (after continueEarlier).
func (p *planner) why(out *memoryv1.Assembled, room uint64, caps [numPartKinds]uint64) *memoryv1.AssemblyWhy {
	w := &memoryv1.AssemblyWhy{Room: room, RecalledCap: caps[PartRecalled], MemoryCap: caps[PartMemory]}
	c := p.l1p.c
	if c == nil {
		c = &planCache{} // a planner without a cache (the reference's): its buffers are new, it sorted no special parts
	}
	all, nRec := p.sectionCands(c)
	recs, mems := all[:nRec], all[nRec:]
	// The memory candidates chooseMemory left out (no room in their tier
	// or the section) rank after those it kept, by value. A later
	// candidate of an entry has no value (addMemory).
	var taken [MaxMemoryCandidates]bool
	for _, m := range p.mems {
		taken[m.from] = true
	}
	kept := len(mems)
	for r, m := range p.memCands {
		if r >= len(p.memValue) || p.memValue[r] == 0 || tierIndex(m.GetTier()) < 0 || taken[r] {
			continue // taken, or a later candidate of a taken entry, or no tier
		}
		mems = append(mems, sectionCand{part: -1, rec: -1, mem: r, val: p.memValue[r]})
	}
	slices.SortStableFunc(mems[kept:], func(a, b sectionCand) int { return cmp.Compare(b.val, a.val) })
	c.whyCands = all[:cap(all)]
	w.RecalledCandidates, w.MemoryCandidates = uint32(len(recs)), uint32(len(mems))
	shown := out.GetRecalled()
	c.recShown = p.recShownAt(shown, c.recShown)
	// The scores and ranks of both sections, and the left-out records,
	// in one allocation each.
	nShown, nMem := len(shown), len(out.GetMemory())
	if n := nShown + nMem; n > 0 {
		scores, ranks := make([]float32, n), make([]uint32, n)
		if nShown > 0 {
			w.RecalledScores, w.RecalledRanks = scores[:nShown:nShown], ranks[:nShown:nShown]
		}
		if nMem > 0 {
			w.MemoryScores, w.MemoryRanks = scores[nShown:], ranks[nShown:]
		}
	}
	los := make([]memoryv1.LeftOut, 0, p.leftOutCount(recs, mems, c.recShown, nMem))
	for rank, cand := range recs {
		if k := c.recShown[cand.rec]; k >= 0 {
			w.RecalledScores[k], w.RecalledRanks[k] = float32(cand.val), uint32(rank+1)
			continue
		}
		if len(los) == MaxLeftOut {
			continue
		}
		ref := &p.recs[cand.rec]
		key := ref.key()
		los = append(los, memoryv1.LeftOut{Section: LayerRecalled, SessionId: key.session, Seq: key.seq, SummaryId: key.summary,
			Score: float32(cand.val), Rank: uint32(rank + 1), Tokens: uint32(cand.tok), Reason: leftOutReason(cand)})
		if ref.m != nil {
			los[len(los)-1].MessageId = ref.m.GetId()
		}
	}
	nRecLeft := len(los)
	for rank, cand := range mems {
		var m *memoryv1.MemoryItem
		r := cand.mem
		if cand.part >= 0 {
			m, r = p.mems[cand.mem].c, p.mems[cand.mem].from
		} else {
			m = p.memCands[cand.mem]
		}
		if k := p.memShownAt(cand, nMem); k >= 0 {
			w.MemoryScores[k], w.MemoryRanks[k] = float32(cand.val), uint32(rank+1)
			continue
		}
		if len(los)-nRecLeft == MaxLeftOut {
			continue
		}
		los = append(los, memoryv1.LeftOut{Section: LayerMemory, Scope: m.GetScope(), KeySha256: p.cands.memorySum(r, m),
			Version: m.GetVersion(), Score: float32(cand.val), Rank: uint32(rank + 1), Tokens: uint32(cand.tok), Reason: leftOutReason(cand)})
	}
	if len(los) > 0 {
		w.LeftOut = make([]*memoryv1.LeftOut, len(los))
		for i := range los {
			w.LeftOut[i] = &los[i]
		}
	}
	return w
}

// memShownAt returns the index of memory candidate c's item among the
// nMem of the plan's memory section (-1: not shown).
func (p *planner) memShownAt(c sectionCand, nMem int) int {
	if c.part < 0 || c.mem >= len(p.memOut) {
		return -1
	}
	if k := int(p.memOut[c.mem]); k < nMem {
		return k
	}
	return -1
}

// leftOutCount is how many left-out candidates why records: at most
// MaxLeftOut of each section's candidates not shown.
func (p *planner) leftOutCount(recs, mems []sectionCand, recShown []int32, nMem int) int {
	var recLeft, memLeft int
	for _, c := range recs {
		if recShown[c.rec] < 0 {
			recLeft++
		}
	}
	for _, c := range mems {
		if p.memShownAt(c, nMem) < 0 {
			memLeft++
		}
	}
	return min(MaxLeftOut, recLeft) + min(MaxLeftOut, memLeft)
}

// sectionCands returns the candidates of both sections, recalled ones
// (the first nRec) then memory ones, each as Allocate weighs them: value
// per token, then value, then the order they were offered in (ties),
// room left for the memory candidates chooseMemory left out (c's buffer).
// allocate sorted its special parts so (by value per token, value, then
// index, which follows the order of the section parts): they are read
// from there when every section part is among them (a value > 0 and
// tokens), and sorted again otherwise.
func (p *planner) sectionCands(c *planCache) (all []sectionCand, nRec int) {
	nRec, nMem := len(p.recs), len(p.mems)
	all = slices.Grow(c.whyCands[:0], nRec+nMem+len(p.memCands))
	cand := func(i int) sectionCand {
		part := p.parts[i]
		return sectionCand{part: i, rec: -1, mem: -1, val: part.Value, den: part.density(), tok: part.Tokens}
	}
	// A special part's value per token and value are its part's.
	fromSpec := func(sp *specPart) sectionCand {
		return sectionCand{part: int(sp.i), rec: -1, mem: -1, val: sp.val, den: sp.den, tok: p.parts[sp.i].Tokens}
	}
	for j := range c.spec {
		if r := p.refs[c.spec[j].i]; r.rec != 0 {
			x := fromSpec(&c.spec[j])
			x.rec = int(r.rec - 1)
			all = append(all, x)
		}
	}
	if len(all) == nRec {
		for j := range c.spec {
			if r := p.refs[c.spec[j].i]; r.mem != 0 {
				x := fromSpec(&c.spec[j])
				x.mem = int(r.mem - 1)
				all = append(all, x)
			}
		}
		if len(all) == nRec+nMem {
			return all, nRec
		}
	}
	// Some section part is not among them: as offered, then sorted.
	all = all[:nRec]
	nRec = 0
	for i, r := range p.refs {
		x := cand(i)
		switch {
		case r.rec != 0:
			x.rec = int(r.rec - 1)
			all[nRec] = x
			nRec++
		case r.mem != 0:
			x.mem = int(r.mem - 1)
			all = append(all, x)
		}
	}
	byWeight := func(a, b sectionCand) int {
		if c := cmp.Compare(b.den, a.den); c != 0 {
			return c
		}
		return cmp.Compare(b.val, a.val)
	}
	slices.SortStableFunc(all[:nRec], byWeight)
	slices.SortStableFunc(all[nRec:], byWeight)
	return all, nRec
}

// recShownAt returns, for each of p.recs, the index of its item in shown
// (-1: not shown), in buf. A recalled item names its part by the
// planner's maps (the session's own message by seq, another session's by
// session and seq), an archived summary by its id.
func (p *planner) recShownAt(shown []*memoryv1.RecalledItem, buf []int32) []int32 {
	at := resize(buf, len(p.recs))
	for i := range at {
		at[i] = -1
	}
	for k, it := range shown {
		if r := p.recOf(it); r >= 0 && at[r] < 0 {
			at[r] = int32(k)
		}
	}
	return at
}

// recOf returns the index in p.recs of the candidate recalled item it
// shows (-1: none).
func (p *planner) recOf(it *memoryv1.RecalledItem) int {
	var part int
	var ok bool
	switch key := (recalledKey{it.GetSessionId(), it.GetSeq(), it.GetSummaryId()}); {
	case key.summary != "":
		for j := range p.recs {
			if p.recs[j].sum != nil && p.recs[j].key() == key {
				return j
			}
		}
		return -1
	case key.session != "":
		part, ok = p.earlierPart[earlierRef{key.session, key.seq}]
	default:
		part, ok = p.swapPart[key.seq]
	}
	if !ok || p.refs[part].rec == 0 || p.recs[p.refs[part].rec-1].key() != (recalledKey{it.GetSessionId(), it.GetSeq(), it.GetSummaryId()}) {
		return -1
	}
	return int(p.refs[part].rec - 1)
}

// leftOutReason is why candidate c was not chosen.
func leftOutReason(c sectionCand) memoryv1.LeftOutReason {
	if c.part >= 0 && (c.val <= 0 || c.tok == 0) {
		return memoryv1.LeftOutReason_LEFT_OUT_REASON_BELOW_THRESHOLD
	}
	return memoryv1.LeftOutReason_LEFT_OUT_REASON_NO_ROOM
}

// recalledKey names a recalled item: a message of a session ("" the
// session's own) by seq, or an archived summary.
type recalledKey struct {
	session string
	seq     uint64
	summary string
}

func (r *recalledRef) key() recalledKey {
	if r.sum != nil {
		return recalledKey{summary: r.sum.GetId(), seq: r.sum.GetLastSeq()}
	}
	return recalledKey{session: r.sid, seq: r.m.GetSeq()}
}

// trimWhy keeps w's scores beside the items trimView kept of a: the first
// dropped recalled items (from the front) and the last memory items (from
// the end); the left-out candidates stay as the plan left them.
func trimWhy(w *memoryv1.AssemblyWhy, recalled, memory int) {
	if w == nil {
		return
	}
	if n := len(w.RecalledScores); n >= recalled && len(w.RecalledRanks) == n {
		w.RecalledScores, w.RecalledRanks = nilIfEmpty(w.RecalledScores[n-recalled:]), nilIfEmpty(w.RecalledRanks[n-recalled:])
	}
	if n := len(w.MemoryScores); n >= memory && len(w.MemoryRanks) == n {
		w.MemoryScores, w.MemoryRanks = nilIfEmpty(w.MemoryScores[:memory]), nilIfEmpty(w.MemoryRanks[:memory])
	}
}
