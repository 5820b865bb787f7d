package projections

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/agentmem/agentmem/internal/swap"
)

// Exact dynamic pruning of the first stage (MaxScore, Turtle and Flood
// 1995): once the top k is full, its worst score θ is a floor every new
// hit must reach. Each clause has an upper bound of what it adds to a
// document (clauseBound); with the clauses ordered by bound, the longest
// prefix whose bounds sum below θ are "non-essential": a document matching
// only them cannot reach θ, so only the documents of the other
// ("essential") clauses are candidates, and the non-essential lists are
// only probed at those documents, skipping the blocks between (unread).
// A candidate whose known part plus the bounds of the clauses not yet
// probed is below θ is dropped without probing further.
//
// The result is the exhaustive scorer's (scoreAll), bit for bit: a
// document kept has every clause probed and its score summed in clause
// order as scoreAll sums it, and a document is dropped only when a bound
// of its score is strictly below θ (an equal score may still enter by the
// order of documents). Bounds are over-estimated by pruneSlack, far more
// than the rounding of the sums they bound.

// pruneSlack multiplies every bound: the scores are sums of up to a few
// dozen rounded terms (relative error < 1e-14), the slack 1e-9.
var pruneSlack = 1 + 1e-9

// clauseBound bounds what cl adds to a document's score. A content
// clause's BM25 term score idf·tf·(k1+1)/(tf + k1·(1−b+b·len/avgdl)) is
// below idf·(k1+1) for every tf and length when k1 ≥ 0 and 0 ≤ b ≤ 1
// (the denominator is at least tf); ok is false for other parameters.
func (r *ranker) clauseBound(cl clause) (bound float64, ok bool) {
	if cl.field {
		return cl.weight * cl.idf * pruneSlack, cl.weight >= 0
	}
	if r.bm.K1 < 0 || r.bm.B < 0 || r.bm.B > 1 {
		return 0, false
	}
	bound = cl.idf * (r.bm.K1 + 1) * pruneSlack
	if cl.scale > 0 {
		bound *= cl.scale
	}
	return bound, true
}

// clauseScore is what cl adds to a document of its posting p: the
// expression scoreAll sums.
func (r *ranker) clauseScore(cl clause, p *blockPosting) float64 {
	switch {
	case cl.field:
		return float64(cl.weight * cl.idf)
	case cl.scale > 0:
		return float64(cl.scale * r.bm.TermScore(p.tf, p.docLen, r.avgdl, cl.idf))
	}
	return r.bm.TermScore(p.tf, p.docLen, r.avgdl, cl.idf)
}

// scorePruned is scoreAll with MaxScore pruning (above); its (clause order)
// and top as scoreAll's.
func (r *ranker) scorePruned(its []*termIter, top *swap.TopK, prox *proximityClauses) (*swap.TopK, error) {
	n := len(its)
	bounds := make([]float64, n)
	for i, it := range its {
		b, ok := r.clauseBound(it.cl)
		if !ok {
			return r.scoreAll(its, top, prox, nil)
		}
		bounds[i] = b
	}
	// byBound: iterator indexes by ascending bound; prefix[j] the sum of
	// the first j bounds (slack included).
	byBound := make([]int, n)
	for i := range byBound {
		byBound[i] = i
	}
	slices.SortStableFunc(byBound, func(a, b int) int { return cmp.Compare(bounds[a], bounds[b]) })
	prefix := make([]float64, n+1)
	for j, i := range byBound {
		prefix[j+1] = prefix[j] + bounds[i]
	}
	var (
		ne      int // byBound[:ne] are non-essential
		contrib = make([]float64, n)
		present = make([]bool, n)
	)
	for {
		if th, full := top.Threshold(); full {
			for ne < n && prefix[ne+1]*pruneSlack < th {
				ne++
			}
		}
		// The next candidate: the smallest document of an essential list.
		doc, any := uint64(0), false
		for _, i := range byBound[ne:] {
			if it := its[i]; !it.done && (!any || it.cur.docID < doc) {
				doc, any = it.cur.docID, true
			}
		}
		if !any {
			return top, nil
		}
		clear(present)
		known := 0.0
		for _, i := range byBound[ne:] {
			if it := its[i]; !it.done && it.cur.docID == doc {
				contrib[i], present[i] = r.clauseScore(it.cl, &it.cur), true
				known += contrib[i]
			}
		}
		// Probe the non-essential lists, the largest bound first, while
		// the document can still reach the top.
		th, full := top.Threshold()
		keep := true
		for j := ne - 1; j >= 0; j-- {
			if full && (known+prefix[j+1])*pruneSlack < th {
				keep = false
				break
			}
			i := byBound[j]
			it := its[i]
			if err := it.advanceTo(doc); err != nil {
				return nil, err
			}
			if !it.done && it.cur.docID == doc {
				contrib[i], present[i] = r.clauseScore(it.cl, &it.cur), true
				known += contrib[i]
			}
		}
		if keep {
			// scoreAll's sum, in clause order.
			score, docLen, nprox := 0.0, uint32(0), 0
			if prox != nil {
				clear(prox.tf)
			}
			for i, it := range its {
				if !present[i] {
					continue
				}
				score += contrib[i]
				if it.prox >= 0 {
					prox.tf[it.prox], docLen = it.cur.tf, it.cur.docLen
					nprox++
				}
			}
			h := swap.Hit{DocID: doc, Score: score}
			if nprox >= 2 && top.Admits(score, doc) {
				h.Bound = prox.weight * r.bm.ProximityBound(prox.tf, prox.weights, docLen, r.avgdl)
			}
			top.Offer(h)
		}
		for _, i := range byBound[ne:] {
			if it := its[i]; !it.done && it.cur.docID == doc {
				if err := it.advance(); err != nil {
					return nil, err
				}
			}
		}
	}
}

// maxBlockSteps: advanceTo reaches a block up to this many keys ahead with
// Next, a farther one with Seek.
const maxBlockSteps = 8

// advanceTo moves to the first posting at or after document doc that
// passes the filter, skipping unread the blocks before doc's.
func (it *termIter) advanceTo(doc uint64) error {
	if it.done || it.cur.docID >= doc {
		return nil
	}
	if blk := doc >> postingBlockShift; blk > it.r.base>>postingBlockShift {
		if err := it.skipTo(blk); err != nil || it.done {
			return err
		}
		if err := it.advance(); err != nil {
			return err
		}
	}
	for !it.done && it.cur.docID < doc {
		if err := it.advance(); err != nil {
			return err
		}
	}
	return nil
}

// skipTo starts decoding the first block numbered blk or more (done when
// there is none), without reading the blocks before it.
func (it *termIter) skipTo(blk uint64) error {
	if it.inline {
		for len(it.blocks) > 0 && it.blocks[0].block < blk {
			it.blocks = it.blocks[1:]
		}
		if len(it.blocks) == 0 {
			it.done = true
			return nil
		}
		it.r.reset(it.blocks[0].block, it.blocks[0].v, it.filter)
		it.blocks = it.blocks[1:]
		return nil
	}
	k, v := it.c.Next()
	for steps := 0; k != nil && bytes.HasPrefix(k, it.prefix) && len(k) == len(it.prefix)+8 && beU64(k[len(it.prefix):]) < blk; steps++ {
		if steps == maxBlockSteps {
			k, v = it.c.Seek(appendBlockKey(it.prefix, blk))
			break
		}
		k, v = it.c.Next()
	}
	return it.load(k, v)
}

// appendBlockKey is the bm25_postings key of block blk of the term of
// prefix (postingPrefix).
func appendBlockKey(prefix []byte, blk uint64) []byte {
	k := make([]byte, 0, len(prefix)+8)
	return append(append(k, prefix...), u64(blk)...)
}
