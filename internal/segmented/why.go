package segmented

import (
	"cmp"
	"crypto/sha256"
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
	// One allocation for both sections' candidates (it runs at every user
	// message): recalled ones first, then memory ones.
	nRec := len(p.recs)
	all := make([]sectionCand, nRec, nRec+len(p.mems)+len(p.memCands))
	nRec = 0
	for i, r := range p.refs {
		part := p.parts[i]
		c := sectionCand{part: i, rec: -1, mem: -1, val: part.Value, den: part.density(), tok: part.Tokens}
		switch {
		case r.rec != 0:
			c.rec = int(r.rec - 1)
			all[nRec] = c
			nRec++
		case r.mem != 0:
			c.mem = int(r.mem - 1)
			all = append(all, c)
		}
	}
	recs, mems := all[:nRec], all[len(p.recs):]
	// As Allocate weighs them: value per token, then value; a stable sort
	// keeps the order they were offered in for ties.
	byWeight := func(a, b sectionCand) int {
		if c := cmp.Compare(b.den, a.den); c != 0 {
			return c
		}
		return cmp.Compare(b.val, a.val)
	}
	slices.SortStableFunc(recs, byWeight)
	slices.SortStableFunc(mems, byWeight)
	// The memory candidates chooseMemory left out (no room in their tier
	// or the section) rank after those it kept, by value.
	kept := len(mems)
	for r, m := range p.memCands {
		if r >= len(p.memValue) || p.memValue[r] == 0 || tierIndex(m.GetTier()) < 0 ||
			slices.ContainsFunc(p.mems, func(c memChoice) bool { return c.from == r }) {
			continue // taken, or a later candidate of a taken entry, or no tier
		}
		if slices.ContainsFunc(p.memCands[:r], func(u *memoryv1.MemoryItem) bool { return sameEntry(u, m) }) {
			continue
		}
		mems = append(mems, sectionCand{part: -1, rec: -1, mem: r, val: p.memValue[r]})
	}
	slices.SortStableFunc(mems[kept:], func(a, b sectionCand) int { return cmp.Compare(b.val, a.val) })
	w.RecalledCandidates, w.MemoryCandidates = uint32(len(recs)), uint32(len(mems))
	shown := out.GetRecalled()
	var shownRec map[recalledKey]int
	if len(shown) > 16 {
		shownRec = make(map[recalledKey]int, len(shown))
		for k, it := range shown {
			shownRec[recalledKey{it.GetSessionId(), it.GetSeq(), it.GetSummaryId()}] = k
		}
	}
	indexOf := func(key recalledKey) int {
		if shownRec != nil {
			if k, ok := shownRec[key]; ok {
				return k
			}
			return -1
		}
		return slices.IndexFunc(shown, func(it *memoryv1.RecalledItem) bool {
			return it.GetSeq() == key.seq && it.GetSessionId() == key.session && it.GetSummaryId() == key.summary
		})
	}
	if n := len(shown); n > 0 {
		w.RecalledScores, w.RecalledRanks = make([]float32, n), make([]uint32, n)
	}
	if n := len(out.GetMemory()); n > 0 {
		w.MemoryScores, w.MemoryRanks = make([]float32, n), make([]uint32, n)
	}
	// The left-out records and the memory keys' digests, in one allocation each.
	los := make([]memoryv1.LeftOut, 0, min(MaxLeftOut, len(recs))+min(MaxLeftOut, len(mems)))
	var sums []byte
	for rank, c := range recs {
		ref := &p.recs[c.rec]
		key := ref.key()
		if k := indexOf(key); k >= 0 {
			w.RecalledScores[k], w.RecalledRanks[k] = float32(c.val), uint32(rank+1)
			continue
		}
		if len(los) == MaxLeftOut {
			continue
		}
		los = append(los, memoryv1.LeftOut{Section: LayerRecalled, SessionId: key.session, Seq: key.seq, SummaryId: key.summary,
			Score: float32(c.val), Rank: uint32(rank + 1), Tokens: uint32(c.tok), Reason: leftOutReason(c)})
		if ref.m != nil {
			los[len(los)-1].MessageId = ref.m.GetId()
		}
	}
	nRecLeft := len(los)
	for rank, c := range mems {
		var m *memoryv1.MemoryItem
		if c.part >= 0 {
			m = p.mems[c.mem].c
		} else {
			m = p.memCands[c.mem]
		}
		if c.part >= 0 && c.mem < len(p.memOut) {
			if k := int(p.memOut[c.mem]); k >= 0 && k < len(w.MemoryScores) {
				w.MemoryScores[k], w.MemoryRanks[k] = float32(c.val), uint32(rank+1)
				continue
			}
		}
		if len(los)-nRecLeft == MaxLeftOut {
			continue
		}
		if sums == nil {
			sums = make([]byte, 0, sha256.Size*min(MaxLeftOut, len(mems)))
		}
		sums = append(sums, ItemKeySum(m)...)
		los = append(los, memoryv1.LeftOut{Section: LayerMemory, Scope: m.GetScope(), KeySha256: sums[len(sums)-sha256.Size:],
			Version: m.GetVersion(), Score: float32(c.val), Rank: uint32(rank + 1), Tokens: uint32(c.tok), Reason: leftOutReason(c)})
	}
	if len(los) > 0 {
		w.LeftOut = make([]*memoryv1.LeftOut, len(los))
		for i := range los {
			w.LeftOut[i] = &los[i]
		}
	}
	return w
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
