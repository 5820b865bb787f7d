package projections

import (
	"sync"

	"github.com/agentmem/agentmem/internal/swap"
)

// A feedback search (Corpus.Feedback) ranks twice: the query's clauses,
// then the same clauses followed by the feedback's. A document's first
// stage score is the sum of its clauses' scores in clause order, so its
// second score is its first one plus the feedback clauses' scores, the
// same float operations in the same order. The first ranking keeps every
// document's score (firstScores); the second merges those, in doc id
// order, with the feedback clauses' posting lists alone instead of
// decoding every list of the query again.

// firstScores are the first-stage scores of every document the first
// ranking of a feedback search scored, in doc id order.
type firstScores struct {
	clauses []clause // the clauses scored, in order
	docs    []scoredDoc
	tfs     []uint32 // the proximity clauses' tfs of docs holding two or more
	nprox   int      // proximity clauses (tfs per document)
}

// firstPool recycles firstScores: a long history's first ranking scores
// tens of thousands of documents, and allocating that array anew for each
// search costs more than filling it.
var firstPool = sync.Pool{New: func() any { return new(firstScores) }}

// newFirstScores returns an empty firstScores of clauses (from firstPool).
func newFirstScores(clauses []clause) *firstScores {
	f := firstPool.Get().(*firstScores)
	f.clauses = append(f.clauses[:0], clauses...)
	f.docs, f.tfs, f.nprox = f.docs[:0], f.tfs[:0], 0
	return f
}

// release returns f to firstPool; f is not used after.
func (f *firstScores) release() {
	if cap(f.docs) > 1<<18 {
		return // an outlier: let it go
	}
	clear(f.clauses) // no strings kept alive
	firstPool.Put(f)
}

// scoredDoc is one document of firstScores: tfs is the offset of its
// proximity tfs in firstScores.tfs (-1: fewer than two proximity terms).
type scoredDoc struct {
	doc    uint64
	score  float64
	tfs    int32
	docLen uint32
}

// record keeps document doc's score and, with nprox ≥ 2, its proximity
// clauses' tfs (prox.tf).
func (f *firstScores) record(doc uint64, score float64, docLen uint32, nprox int, prox *proximityClauses) {
	d := scoredDoc{doc: doc, score: score, tfs: -1, docLen: docLen}
	if nprox >= 2 {
		d.tfs, f.nprox = int32(len(f.tfs)), len(prox.tf)
		f.tfs = append(f.tfs, prox.tf...)
	}
	f.docs = append(f.docs, d)
}

// scoreAfter is scoreAll of the clauses first scored followed by those of
// its (never proximity clauses): each document's score in first, then its
// clauses' scores from its, in order.
func (r *ranker) scoreAfter(first *firstScores, its []*termIter, top *swap.TopK, prox *proximityClauses) (*swap.TopK, error) {
	i := 0
	for {
		doc, any := uint64(0), false
		if i < len(first.docs) {
			doc, any = first.docs[i].doc, true
		}
		for _, it := range its {
			if !it.done && (!any || it.cur.docID < doc) {
				doc, any = it.cur.docID, true
			}
		}
		if !any {
			return top, nil
		}
		score, tfs, docLen := 0.0, int32(-1), uint32(0)
		if i < len(first.docs) && first.docs[i].doc == doc {
			d := &first.docs[i]
			score, tfs, docLen = d.score, d.tfs, d.docLen
			i++
		}
		for _, it := range its {
			if !it.done && it.cur.docID == doc {
				score += r.clauseScore(it.cl, &it.cur)
				if err := it.advance(); err != nil {
					return nil, err
				}
			}
		}
		h := swap.Hit{DocID: doc, Score: score}
		if tfs >= 0 && prox != nil && top.Admits(score, doc) {
			h.Bound = prox.weight * r.bm.ProximityBound(first.tfs[tfs:int(tfs)+first.nprox], prox.weights, docLen, r.avgdl)
		}
		top.Offer(h)
	}
}
