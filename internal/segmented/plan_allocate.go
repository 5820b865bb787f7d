package segmented

import (
	"slices"
)

// allocate is Allocate over the planner's parts and the plain L1 spans:
// it returns the indexes of the chosen parts, ascending, and marks the
// chosen spans (plain, or parts of L1) in p.l1p.chosen.
//
// Three streams are merged, each in Allocate's order: the plain spans
// (plainOrder), the L2 summaries that share no word with the message
// (valued summaryBase: their order depends on their tokens alone and is
// kept while L2 does not change, l2BaseOrder), and the other parts,
// sorted here (summaries sharing words, hits, scope entries: tens).
func (p *planner) allocate(room uint64, caps [numPartKinds]uint64) []int {
	lp, c := p.l1p, p.l1p.c
	m := len(lp.spans)
	// The index each part has in Allocate's parts: an L1 span's is its
	// span's; the others follow the spans in the order they were added.
	idx := resize(c.idx, len(p.parts))
	for i := range idx {
		idx[i] = -1
	}
	for _, k := range lp.made {
		idx[lp.vals[k].part] = int(k)
	}
	spec := c.spec[:0]
	next := m
	for i, part := range p.parts {
		if idx[i] < 0 {
			idx[i] = next
			next++
		}
		if part.Value > 0 && part.Tokens > 0 && part.Kind < numPartKinds && !p.l2Base(i) {
			spec = append(spec, specPart{den: part.density(), val: part.Value, idx: int32(idx[i]), i: int32(i)})
		}
	}
	c.idx, c.spec, c.parts, c.refs, c.recs, c.mems = idx, spec, p.parts, p.refs, p.recs, p.mems
	c.specBuf = sortSpec(spec, c.specBuf)
	order := lp.plainOrder()
	base := p.l2BaseOrder()
	if !p.fill(order, base, room, caps) {
		// The order kept from the last plan no longer holds (spans merged
		// in the middle, or a rounding that ties two values differently):
		// sorted, and filled again from the start.
		lp.sortPlain(order)
		p.fill(order, base, room, caps)
	}
	return c.chosenIdx
}

// fill takes the parts of the three streams in Allocate's order while they
// fit (in room, and in their kind's cap) and records the choice:
// c.chosenIdx, and the chosen spans and their counts in p.l1p. It checks
// that the plain spans are in Allocate's order as it reads them (the rest
// after): false, and the choice is not to be used, when they are not.
func (p *planner) fill(order, base []int32, room uint64, caps [numPartKinds]uint64) bool {
	lp, c := p.l1p, p.l1p.c
	m, spec, idx := len(lp.spans), c.spec, c.idx
	clear(lp.chosen)
	lp.chosenEnts, lp.chosenTokens, lp.nPlainChosen, lp.chosenL2 = 0, 0, 0, 0
	var used uint64
	var byKind [numPartKinds]uint64
	chosen := resize(c.chosenParts, len(p.parts))
	clear(chosen)
	c.chosenParts = chosen
	nChosen := 0
	take := func(i int) {
		part := p.parts[i]
		if part.Tokens > room-used {
			return
		}
		if c := caps[part.Kind]; c > 0 && part.Tokens > c-min(c, byKind[part.Kind]) {
			return
		}
		used += part.Tokens
		byKind[part.Kind] += part.Tokens
		chosen[i] = true
		nChosen++
		if k := idx[i]; k < m {
			lp.chosen[k] = true
			lp.chosenEnts += int(lp.spans[k].to - lp.spans[k].from)
			lp.chosenTokens += lp.spans[k].tokens
		} else if p.refs[i].l2 >= 0 {
			lp.chosenL2 += part.Tokens
		}
	}
	si, oi, bi := 0, 0, 0
	// The base L2 head (from bi on): its value per token, value and index.
	var bDen, bVal float64
	var bIdx int
	nextBase := func() {
		for ; bi < len(base); bi++ {
			i := p.l2First + int(base[bi])
			if part := p.parts[i]; p.l2Base(i) && part.Tokens > 0 {
				bDen, bVal, bIdx = part.density(), part.Value, idx[i]
				return
			}
		}
	}
	nextBase()
	// order[:checked+1] is known to be in order; pDen, pVal and pK are
	// order[checked]'s.
	checked, pDen, pVal, pK := 0, 0.0, 0.0, 0
	if len(order) > 0 {
		v := &lp.vals[order[0]]
		pDen, pVal, pK = v.den, v.val, int(order[0])
	}
fill:
	for used < room {
		// The better of the special and base L2 heads (other: 0 special,
		// 2 base L2, -1 none), then the plain spans before it.
		other, oDen, oVal, oIdx := -1, 0.0, 0.0, 0
		if si < len(spec) {
			a := &spec[si]
			other, oDen, oVal, oIdx = 0, a.den, a.val, int(a.idx)
		}
		if bi < len(base) && (other < 0 || before(bDen, bVal, bIdx, oDen, oVal, oIdx)) {
			other, oDen, oVal, oIdx = 2, bDen, bVal, bIdx
		}
		for ; oi < len(order) && used < room; oi++ {
			k := order[oi]
			v := &lp.vals[k]
			if oi > checked {
				if before(v.den, v.val, int(k), pDen, pVal, pK) {
					return false
				}
				checked, pDen, pVal, pK = oi, v.den, v.val, int(k)
			}
			if v.part >= 0 || v.val <= 0 || v.tokens == 0 {
				continue
			}
			if other >= 0 && !before(v.den, v.val, int(k), oDen, oVal, oIdx) {
				break
			}
			if v.tokens <= room-used {
				used += v.tokens
				lp.chosen[k] = true
				sp := &lp.spans[k]
				lp.chosenEnts += int(sp.to - sp.from)
				lp.chosenTokens += v.tokens
				lp.nPlainChosen++
			}
		}
		if used >= room {
			break
		}
		switch other {
		case 0:
			take(int(spec[si].i))
			si++
		case 2:
			take(p.l2First + int(base[bi]))
			bi++
			nextBase()
		default:
			break fill
		}
	}
	if !lp.plainSorted(order, checked) {
		return false
	}
	c.chosenIdx = chosenIndexes(chosen, nChosen, c.chosenIdx)
	return true
}

// chosenIndexes returns the indexes marked in chosen (n of them),
// ascending, in buf.
func chosenIndexes(chosen []bool, n int, buf []int) []int {
	out := slices.Grow(buf[:0], n)
	for i, ok := range chosen {
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// l2Base reports whether part i is an L2 summary valued summaryBase (it
// shares no word with the message): allocate takes those from
// l2BaseOrder.
func (p *planner) l2Base(i int) bool {
	return p.l2First >= 0 && i >= p.l2First && i < p.l2First+p.l2Len && p.parts[i].Value == summaryBase
}

// l2BaseOrder returns the L2 indexes in Allocate's order of L2 summaries
// all valued summaryBase (by value per token, then L2 order), kept in the
// planner's cache while L2 holds the same summaries.
func (p *planner) l2BaseOrder() []int32 {
	c := p.l1p.c
	l2 := p.s.snap.GetL2()
	if len(c.l2Sums) == len(l2) && slices.Equal(c.l2Sums, l2) {
		return c.l2Order
	}
	c.l2Sums = append(c.l2Sums[:0], l2...)
	c.l2Order = c.l2Order[:0]
	den := make([]float64, len(l2))
	for i, sum := range l2 {
		c.l2Order = append(c.l2Order, int32(i))
		den[i] = Part{Tokens: uint64(sum.GetTokens()), Value: summaryBase}.density()
	}
	slices.SortFunc(c.l2Order, func(a, b int32) int {
		if before(den[a], summaryBase, int(a), den[b], summaryBase, int(b)) {
			return -1
		}
		return 1
	})
	return c.l2Order
}
