package swap

import "math"

// BM25 holds the Okapi BM25 parameters: K1 saturates term frequency, B
// controls document length normalization. See the package documentation for
// the formula.
type BM25 struct {
	K1 float64
	B  float64
}

// DefaultBM25 returns the usual parameters, K1 = 1.2 and B = 0.75.
func DefaultBM25() BM25 { return BM25{K1: 1.2, B: 0.75} }

// IDF returns the inverse document frequency of a term found in df of n
// documents: ln(1 + (n − df + 0.5) / (df + 0.5)). It is always positive.
// A df greater than n (a caller bug: counts out of step) is treated as n.
func (p BM25) IDF(n, df uint64) float64 {
	if df > n {
		df = n
	}
	N, DF := float64(n), float64(df)
	return math.Log(1 + (N-DF+0.5)/(DF+0.5))
}

// TermScore returns one query term's contribution to a document's score:
//
//	idf · tf·(k1+1) / (tf + k1·(1 − b + b·docLen/avgdl))
//
// A zero tf scores 0. An avgdl that is not positive (an empty corpus) is
// treated as docLen, i.e. no length normalization.
func (p BM25) TermScore(tf, docLen uint32, avgdl, idf float64) float64 {
	if tf == 0 {
		return 0
	}
	ratio := 1.0
	if avgdl > 0 {
		ratio = float64(docLen) / avgdl
	}
	f := float64(tf)
	return idf * f * (p.K1 + 1) / (f + p.K1*(1-p.B+p.B*ratio))
}
