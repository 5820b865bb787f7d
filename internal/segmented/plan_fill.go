package segmented

// fill takes the parts of the three streams in Allocate's order while they
// fit (in room, and in their kind's cap) and records the choice:
// c.chosenIdx, and the chosen spans and their counts in p.l1p. heads are
// the special parts and the base L2 summaries merged in Allocate's order
// (mergeHeads); the plain spans before each head are taken before it.
// order is the plain spans in Allocate's order (plainOrder checked it).
func (p *planner) fill(order []int32, heads []specPart, room uint64, caps [numPartKinds]uint64) {
	lp, c := p.l1p, p.l1p.c
	m, idx := len(lp.spans), c.idx
	clear(lp.chosen[:m])
	lp.chosenEnts, lp.chosenTokens, lp.nPlainChosen, lp.chosenL2 = 0, 0, 0, 0
	parts := p.parts
	var used uint64
	var byKind [numPartKinds]uint64
	chosen := resize(c.chosenParts, len(parts))
	clear(chosen)
	c.chosenParts = chosen
	nChosen := 0
	// w walks the plain spans.
	w := plainWalk{order: order, vals: lp.vals[:m], chosen: lp.chosen[:m]}
	for hi := 0; used < room; hi++ {
		// The next head (none: the plain spans left), and the plain
		// spans before it.
		other := hi < len(heads)
		var h specPart
		if other {
			h = heads[hi]
		}
		if !w.after(other, h.den, h.val, int(h.idx)) {
			if used = w.take(used, room, other, h.den, h.val, int(h.idx)); used >= room {
				break
			}
		}
		if !other {
			break
		}
		// The head, when it fits.
		i := int(h.i)
		if part := &parts[i]; part.Tokens <= room-used {
			if cp := caps[part.Kind]; cp == 0 || part.Tokens <= cp-min(cp, byKind[part.Kind]) {
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
		}
	}
	lp.chosenEnts += w.ents
	lp.chosenTokens += w.tokens
	lp.nPlainChosen += w.n
	c.chosenIdx = chosenIndexes(chosen, nChosen, c.chosenIdx)
}

// mergeHeads merges the special parts (c.spec, sorted) and the base L2
// summaries (base: L2 indexes in Allocate's order; those still valued
// summaryBase, of some tokens) in Allocate's order, in buf.
func (p *planner) mergeHeads(base []int32, buf []specPart) []specPart {
	spec, idx := p.l1p.c.spec, p.l1p.c.idx
	out := buf[:0]
	si := 0
	for _, b := range base {
		i := p.l2First + int(b)
		part := &p.parts[i]
		if !p.l2Base(i) || part.Tokens == 0 {
			continue
		}
		den, val, k := part.density(), part.Value, idx[i]
		for si < len(spec) && !before(den, val, k, spec[si].den, spec[si].val, int(spec[si].idx)) {
			out = append(out, spec[si])
			si++
		}
		out = append(out, specPart{den: den, val: val, idx: int32(k), i: int32(i)})
	}
	return append(out, spec[si:]...)
}

// plainWalk is fill's walk of the plain spans in their order: the next
// one (oi), and what it chose (marked in chosen: n spans of ents entries
// and tokens).
type plainWalk struct {
	order   []int32
	vals    []spanValue
	chosen  []bool
	oi      int
	n, ents int
	tokens  uint64
}

// after reports whether the plain span at oi, one take would take or
// stop at, comes after the head (den, val, idx) of the other streams
// (other): take would then take nothing, and need not be called (most
// heads, taken one after the other).
func (w *plainWalk) after(other bool, den, val float64, idx int) bool {
	if !other || w.oi >= len(w.order) {
		return other
	}
	k := w.order[w.oi]
	v := &w.vals[k]
	return v.part < 0 && v.val > 0 && v.tokens > 0 && !before(v.den, v.val, int(k), den, val, idx)
}

// take takes the plain spans from oi on, while used < room, that come
// before the head (den, val, idx) of the other streams (every one when
// there is none: !other) and fit, and returns used. (Its own function,
// with its own registers: the loop over the plain spans is most of a
// plan.)
func (w *plainWalk) take(used, room uint64, other bool, den, val float64, idx int) uint64 {
	vals, chosen := w.vals, w.chosen
	rest := w.order[w.oi:]
	start := used
	var n, ents int
	i := 0
	for ; i < len(rest) && used < room; i++ {
		k := rest[i]
		v := &vals[k]
		if v.part >= 0 || v.val <= 0 || v.tokens == 0 {
			continue
		}
		if other && !before(v.den, v.val, int(k), den, val, idx) {
			break
		}
		if t := v.tokens; t <= room-used {
			used += t
			chosen[k] = true
			n++
			ents += int(v.ents)
		}
	}
	w.oi += i
	w.n += n
	w.ents += ents
	w.tokens += used - start // what it took is plain spans only
	return used
}
