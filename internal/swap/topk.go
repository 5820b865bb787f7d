package swap

import (
	"math"
	"slices"
)

// Hit is one scored document.
type Hit struct {
	DocID uint64
	Score float64
	// Bound is for the caller: for instance an upper bound of what a
	// re-ranking may add to Score. It plays no part in the order.
	Bound float64
}

// TopK keeps the k best hits offered to it: higher score first, and for equal
// scores the smaller DocID first, so the result is deterministic whatever the
// order of the offers. A NaN score ranks below every other score.
//
// TopK is a bounded min-heap (the worst kept hit at the root): Offer costs
// O(log k) and memory is O(k). It does not deduplicate: offer each DocID
// once. It is not safe for concurrent use.
type TopK struct {
	k    int
	heap []Hit // heap[0] is the worst kept hit; len(heap) <= k
	// first, when set, orders hits of equal scores instead of their DocIDs
	// (NewTopKBy).
	first func(a, b uint64) bool
}

// NewTopK returns a TopK that keeps at most k hits; k <= 0 keeps none.
func NewTopK(k int) *TopK {
	k = max(k, 0)
	return &TopK{k: k, heap: make([]Hit, 0, min(k, 1024))}
}

// NewTopKBy is NewTopK whose hits of equal scores rank by first (a strict
// order of DocIDs: first(a, b) when a ranks before b) instead of the
// smaller DocID first.
func NewTopKBy(k int, first func(a, b uint64) bool) *TopK {
	t := NewTopK(k)
	t.first = first
	return t
}

// Offer considers h for the top k.
func (t *TopK) Offer(h Hit) {
	switch {
	case t.k == 0:
	case len(t.heap) < t.k:
		t.heap = append(t.heap, h)
		t.up(len(t.heap) - 1)
	case t.before(h, t.heap[0]):
		t.heap[0] = h
		t.down(0)
	}
}

// Admits reports whether a hit of this score and DocID would be kept if
// offered now (so a caller can skip computing what goes with it).
func (t *TopK) Admits(score float64, docID uint64) bool {
	return t.k > 0 && (len(t.heap) < t.k || t.before(Hit{DocID: docID, Score: score}, t.heap[0]))
}

// Threshold returns the score of the worst hit kept when k hits are kept
// (full); a hit scoring below it is not admitted (one scoring the same may
// be, by the order of DocIDs). full is false while fewer than k are kept
// (any hit is admitted).
func (t *TopK) Threshold() (score float64, full bool) {
	switch {
	case t.k == 0:
		return math.Inf(1), true // nothing is admitted
	case len(t.heap) < t.k:
		return 0, false
	}
	return rankScore(t.heap[0].Score), true
}

// Len returns the number of hits kept.
func (t *TopK) Len() int { return len(t.heap) }

// Sorted returns the kept hits, best first, in a new slice. It does not
// change t: more hits may be offered afterwards.
func (t *TopK) Sorted() []Hit {
	out := slices.Clone(t.heap)
	slices.SortFunc(out, func(a, b Hit) int {
		switch {
		case t.before(a, b):
			return -1
		case t.before(b, a):
			return 1
		}
		return 0
	})
	return out
}

// before reports whether a ranks before (is better than) b: a strict total
// order on (score, DocID), with NaN below -Inf; DocIDs ordered by t.first
// when set.
func (t *TopK) before(a, b Hit) bool {
	sa, sb := rankScore(a.Score), rankScore(b.Score)
	if sa != sb {
		return sa > sb
	}
	if na, nb := math.IsNaN(a.Score), math.IsNaN(b.Score); na != nb {
		return nb
	}
	if t.first != nil {
		return a.DocID != b.DocID && t.first(a.DocID, b.DocID)
	}
	return a.DocID < b.DocID
}

func rankScore(s float64) float64 {
	if math.IsNaN(s) {
		return math.Inf(-1)
	}
	return s
}

// up and down restore the heap property, "parent ranks after children".
func (t *TopK) up(i int) {
	h := t.heap
	for i > 0 {
		p := (i - 1) / 2
		if !t.before(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (t *TopK) down(i int) {
	h := t.heap
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && t.before(h[worst], h[l]) {
			worst = l
		}
		if r < len(h) && t.before(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}
