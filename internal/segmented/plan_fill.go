package segmented

// fill takes the parts of the three streams in Allocate's order while they
// fit (in room, and in their kind's cap) and records the choice:
// c.chosenIdx, and the chosen spans and their counts in p.l1p. It checks
// that the plain spans are in Allocate's order (after the walk, all at
// once): false, and the choice is not to be used, when they are not.
func (p *planner) fill(order, base []int32, room uint64, caps [numPartKinds]uint64) bool {
	lp, c := p.l1p, p.l1p.c
	m, spec, idx := len(lp.spans), c.spec, c.idx
	clear(lp.chosen[:m])
	lp.chosenEnts, lp.chosenTokens, lp.nPlainChosen, lp.chosenL2 = 0, 0, 0, 0
	parts := p.parts
	var used uint64
	var byKind [numPartKinds]uint64
	chosen := resize(c.chosenParts, len(parts))
	clear(chosen)
	c.chosenParts = chosen
	nChosen := 0
	// w walks the plain spans; si and bi are the heads of the special
	// parts and of the base L2 summaries (bDen, bVal, bIdx: bi's value
	// per token, value and index in Allocate's parts).
	w := plainWalk{order: order, vals: lp.vals[:m], chosen: lp.chosen[:m]}
	si := 0
	bi, bDen, bVal, bIdx := p.nextBase(base, 0, idx)
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
		if !w.after(other >= 0, oDen, oVal, oIdx) {
			if used = w.take(used, room, other >= 0, oDen, oVal, oIdx); used >= room {
				break
			}
		}
		// The head of other, when it fits.
		var i int
		switch other {
		case 0:
			i = int(spec[si].i)
			si++
		case 2:
			i = p.l2First + int(base[bi])
		default:
			i = -1
		}
		if i < 0 {
			break
		}
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
		if other == 2 {
			bi, bDen, bVal, bIdx = p.nextBase(base, bi+1, idx)
		}
	}
	lp.chosenEnts += w.ents
	lp.chosenTokens += w.tokens
	lp.nPlainChosen += w.n
	if !lp.plainSorted(order, 0) {
		return false
	}
	c.chosenIdx = chosenIndexes(chosen, nChosen, c.chosenIdx)
	return true
}

// nextBase returns the first of base from bi on that fill takes (an L2
// summary valued summaryBase, of some tokens), its value per token, value
// and index in Allocate's parts (bi is len(base) when none is left).
func (p *planner) nextBase(base []int32, bi int, idx []int) (int, float64, float64, int) {
	for ; bi < len(base); bi++ {
		i := p.l2First + int(base[bi])
		if part := &p.parts[i]; p.l2Base(i) && part.Tokens > 0 {
			return bi, part.density(), part.Value, idx[i]
		}
	}
	return bi, 0, 0, 0
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
// plan. Whether they are in Allocate's order is checked after, in one
// pass over all of them: fill's choice is used only when they are.)
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
