package segmented

import (
	"slices"
	"sort"
)

// The allocation of a plan without a Part per L1 entry. Allocate visits
// the parts by value per token, best first (ties: the higher value, then
// the lower index), and takes each that still fits. Most parts are plain
// L1 spans, valued by recency alone: recentWeight · 2^(−d/recentHalfLife)
// for a span d spans older than the tail (times questionWeight for a bare
// question). A user message later, every span is as many spans older, so
// every plain value is multiplied by the same factor and the order of the
// plain spans among themselves does not change: the planner keeps it from
// one plan to the next (planCache.order), places the spans that are new
// (or changed) by binary search, and checks the result against the exact
// comparison of the values of this plan, sorting again only when it does
// not hold (spans merged in the middle, or a rounding that ties two
// values differently). The few other parts — summaries, search hits
// (raised spans included), recalled messages, scope entries — are sorted
// as Allocate sorts them and merged with the plain spans. The result is
// Allocate's, choice for choice (TestPlanMatchesReference).

// l1Plan is the L1 side of one plan: the spans older than the tail, their
// values, and which the allocation chose.
type l1Plan struct {
	c     *planCache
	spans []l1Span
	// vals: each span's value as a plain span, and its part (spanValue);
	// made lists the spans that have a part (see setPart).
	vals   []spanValue
	made   []int32
	chosen []bool
	// sums lists the spans that are summaries.
	sums []int32
	// nPlain and nPlainChosen count the plain spans and those chosen.
	nPlain, nPlainChosen int
	// chosenL2 is the tokens of the L2 summaries chosen.
	chosenL2 uint64
	// chosenEnts counts the L1 entries of the chosen spans, chosenTokens
	// their tokens.
	chosenEnts   int
	chosenTokens uint64
	// kept is how many spans (the first) are the last plan's (spansTo),
	// prevTail the last plan's spans after them.
	kept     int
	prevTail []l1Span
	// breaks and lastShown: what seqs noted for planMarks.
	breaks    []int32
	lastShown int
}

// spanValue is what the allocation reads of a span, together (one cache
// line, where four arrays took four): its value and value per token as a
// plain span (a summary's is its part's), its tokens and entries, and its part in
// planner.parts (-1: none, a plain span the allocation takes from the
// kept order).
type spanValue struct {
	den, val float64
	tokens   uint64
	part     int32
	ents     int32 // the span's L1 entries
}

// freshInsertMax: more new spans than this since the last plan, and the
// plain order is sorted again rather than inserted into.
const freshInsertMax = 8

// newL1Plan prepares the spans of the L1 entries before tail, valued as
// plain spans.
func newL1Plan(c *planCache, tail int) *l1Plan {
	lp := &c.lp
	*lp = l1Plan{c: c, made: c.lp.made[:0], sums: c.lp.sums[:0], breaks: c.lp.breaks[:0], lastShown: -1}
	lp.spans, lp.prevTail, lp.kept = c.spansTo(tail)
	m := len(lp.spans)
	lp.vals, lp.chosen = resize(c.vals, m), resize(c.chosen, m)
	c.vals, c.chosen = lp.vals, lp.chosen
	// lp.chosen is cleared by allocate (fill).
	lp.nPlain = m
	recent := c.recentValues(m)
	vals, spans, sums := lp.vals[:m], lp.spans[:m], lp.sums
	for k := range spans {
		sp := &spans[k]
		v := recent[m-1-k]
		if sp.summary {
			sums = append(sums, int32(k))
		} else if sp.bare {
			v *= questionWeight
		}
		// A span's tokens are a sum of uint32 counts over fewer than
		// 2^31 entries: below 2^63, where the signed conversion (one
		// instruction) is the unsigned one.
		// (Field by field: a composite literal is built on the stack and
		// copied.)
		x := &vals[k]
		x.den, x.val, x.tokens, x.part, x.ents = v/float64(int64(max(sp.tokens, densityFloorTokens))), v, sp.tokens, -1, sp.to-sp.from
	}
	lp.sums = sums
	return lp
}

// resize returns buf with n elements (not cleared), reallocated when too
// small.
func resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n, n+n/4)
	}
	return buf[:n]
}

// setPart records that span k is part i of the planner.
func (lp *l1Plan) setPart(k, i int) {
	lp.vals[k].part = int32(i)
	lp.made = append(lp.made, int32(k))
	lp.nPlain--
}

// spanAt returns the span holding L1 entry i (older than the tail).
func (lp *l1Plan) spanAt(i int) int {
	if c := lp.c; c != nil && i < len(c.entSpan) {
		if k := int(c.entSpan[i]); k < len(lp.spans) && int(lp.spans[k].from) <= i && i < int(lp.spans[k].to) {
			return k
		}
	}
	// sort.Search for the first span ending after i, without its closure.
	lo, hi := 0, len(lp.spans)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if int(lp.spans[mid].to) > i {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// partOf returns span k as a Part, valued by recency.
func (lp *l1Plan) partOf(k int) (Part, partRef) {
	sp := lp.spans[k]
	kind := PartL1
	if sp.summary {
		kind = PartSummary
	}
	return Part{Kind: kind, Tokens: sp.tokens, Value: lp.vals[k].val}, partRef{l1From: int(sp.from), l1To: int(sp.to), l2: -1}
}

// plainBefore reports whether plain span a comes before plain span b in
// Allocate's order (the index of an L1 span's part is its span index).
func (lp *l1Plan) plainBefore(a, b int32) bool {
	va, vb := &lp.vals[a], &lp.vals[b]
	return before(va.den, va.val, int(a), vb.den, vb.val, int(b))
}

// before reports whether a part comes before another in Allocate's order:
// by value per token, best first, then the higher value, then the lower
// index. Allocate compares with cmp.Compare, which orders NaN first; the
// parts it visits have a value > 0 (NaN is not), and so a value per token
// > 0: plain comparisons are the same.
func before(denA, valA float64, idxA int, denB, valB float64, idxB int) bool {
	if denA != denB {
		return denA > denB
	}
	if valA != valB {
		return valA > valB
	}
	return idxA < idxB
}

// plainOrder returns the spans that are not summaries in Allocate's order
// (by their plain values) as far as the order kept since the last plan
// tells, and keeps this plan's spans and order for the next. allocate
// checks the order (plainSorted) and sorts it when it does not hold.
func (lp *l1Plan) plainOrder() []int32 {
	c := lp.c
	// The last plan's spans: the first kept of cur, then prevTail.
	cur, tail, kept := lp.spans, lp.prevTail, lp.kept
	n := kept + len(tail)
	if cap(c.mapped) < n-kept {
		c.mapped = make([]int32, n-kept)
	}
	// mapped[j-kept] is the index now of the last plan's span j >=
	// kept (-1: gone); the spans spansTo kept are the same, at the same
	// indexes.
	mapped := c.mapped[:n-kept]
	fresh := c.fresh[:0]
	j := kept
	for k := kept; k < len(cur); k++ {
		for j < n && tail[j-kept].seq < cur[k].seq {
			mapped[j-kept] = -1
			j++
		}
		if j < n && tail[j-kept].seq == cur[k].seq {
			if p := tail[j-kept]; p.to-p.from == cur[k].to-cur[k].from && p.tokens == cur[k].tokens && p.bare == cur[k].bare && p.summary == cur[k].summary {
				mapped[j-kept] = int32(k)
				j++
				continue
			}
			mapped[j-kept] = -1
			j++
		}
		if !cur[k].summary {
			fresh = append(fresh, int32(k))
		}
	}
	for ; j < n; j++ {
		mapped[j-kept] = -1
	}
	order := c.spareOrder[:0]
	for _, j := range c.order {
		if int(j) < kept {
			order = append(order, j)
		} else if k := mapped[int(j)-kept]; k >= 0 {
			order = append(order, k)
		}
	}
	if len(fresh) > freshInsertMax {
		order = append(order, fresh...)
		lp.sortPlain(order)
	} else {
		for _, k := range fresh {
			pos := sort.Search(len(order), func(i int) bool { return lp.plainBefore(k, order[i]) })
			order = slices.Insert(order, pos, k)
		}
	}
	c.fresh = fresh
	c.spareOrder, c.order = c.order, order
	c.spareSpans, c.spans = tail, cur
	return order
}

// sortPlain sorts plain spans in Allocate's order (in place: the order
// kept for the next plan when it is plainOrder's).
func (lp *l1Plan) sortPlain(order []int32) {
	slices.SortFunc(order, func(a, b int32) int {
		if lp.plainBefore(a, b) {
			return -1
		}
		return 1 // never equal: the index breaks ties
	})
}

// plainSorted reports whether order is in Allocate's order from its
// element from on (the ones before are known to be).
func (lp *l1Plan) plainSorted(order []int32, from int) bool {
	from = max(from, 0)
	if from+1 >= len(order) {
		return true
	}
	vals := lp.vals
	q := order[from]
	prev := &vals[q]
	for _, k := range order[from+1:] {
		v := &vals[k]
		if before(v.den, v.val, int(k), prev.den, prev.val, int(q)) {
			return false
		}
		q, prev = k, v
	}
	return true
}

// specPart is a part of the planner sorted for allocate: its value per
// token, value, index in Allocate's parts, and index in planner.parts.
type specPart struct {
	den, val float64
	idx, i   int32
}

// plainAllChosen reports whether the allocation chose every plain span.
func (lp *l1Plan) plainAllChosen() bool { return lp.nPlainChosen == lp.nPlain }

// seqs returns the first seqs of the L1 entries of the chosen spans, in
// seq order (nil: none), and notes where they break (noteBreaks).
func (lp *l1Plan) seqs(ents []l1Info) []uint64 {
	lp.lastShown = -1
	lp.breaks = lp.breaks[:0]
	if lp.chosenEnts == 0 {
		return nil
	}
	// A span of one entry (most) is written whether chosen or not, and
	// counted when chosen (no branch to mispredict): out has a spare slot.
	out := make([]uint64, lp.chosenEnts+1)
	n := 0
	spans := lp.spans
	chosen := lp.chosen[:len(spans)]
	for k := range spans {
		sp := &spans[k]
		if sp.to-sp.from == 1 {
			out[n] = sp.seq
			if chosen[k] {
				n++
			}
			continue
		}
		if chosen[k] {
			for _, e := range ents[sp.from:sp.to] {
				out[n] = e.seq
				n++
			}
		}
	}
	lp.noteBreaks(ents)
	return out[:n:n]
}

// noteBreaks notes where the chosen entries break (planMarks): each
// chosen entry that is not a message right after a chosen message, with
// the chosen entry before it (-1: none), in lp.breaks; the last chosen
// entry in lp.lastShown. (A pass of its own: with seqs' loop, neither
// kept its counters in registers.)
func (lp *l1Plan) noteBreaks(ents []l1Info) {
	breaks := resize(lp.breaks, 2*lp.chosenEnts)
	nb := 0
	spans := lp.spans
	chosen := lp.chosen[:len(spans)]
	last, msg := -1, false // the last chosen entry, and whether a message
	for k := range spans {
		if !chosen[k] {
			continue
		}
		sp := &spans[k]
		j := int(sp.from)
		if sp.to-sp.from == 1 {
			if j != last+1 || !msg || sp.summary || j == 0 {
				breaks[nb], breaks[nb+1] = int32(j), int32(last)
				nb += 2
			}
			last, msg = j, !sp.summary
			continue
		}
		for ; j < int(sp.to); j++ {
			em := ents[j].msg != nil
			if j != last+1 || !msg || !em || j == 0 {
				breaks[nb], breaks[nb+1] = int32(j), int32(last)
				nb += 2
			}
			last, msg = j, em
		}
	}
	lp.breaks, lp.lastShown = breaks[:nb], last
}
