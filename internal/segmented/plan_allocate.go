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
	if !lp.plainSorted(order, 0) {
		// The order kept from the last plan no longer holds (spans merged
		// in the middle, or a rounding that ties two values differently):
		// sorted.
		lp.sortPlain(order)
	}
	c.heads = p.mergeHeads(p.l2BaseOrder(), c.heads)
	p.fill(order, c.heads, room, caps)
	return c.chosenIdx
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
