package swap

// ProximityWindow is the largest distance, in term positions, at which two
// query terms of a document still earn a proximity score.
const ProximityWindow = 5

// maxProximityTerms and maxProximityPositions bound the work of Proximity
// on long queries and long documents: the first query terms and the first
// occurrences of each term in the document are used.
const (
	maxProximityTerms     = 16
	maxProximityPositions = 64
)

// Proximity returns the term-proximity score of a document, to add to its
// BM25 score (BM25TP, Rasolofo and Savoy, "Term proximity scoring for
// keyword-based retrieval systems", ECIR 2003). doc is the document's
// terms in text order (Analyze), terms the query terms in query order
// (duplicate-free) and weights their weights (their idf).
//
// For every pair of distinct query terms a, b (a before b in the query) and
// every pair of their occurrences at a distance of at most ProximityWindow,
//
//	acc(a,b) += 1 / dist²
//
// where dist is the number of positions from a's occurrence to b's when b
// follows a (a phrase "a b" has dist 1), and one more when b precedes a (so
// the query's order ranks first). Each pair then adds
//
//	min(w_a, w_b) · acc·(k1+1) / (acc + k1·(1 − b + b·docLen/avgdl))
//
// which saturates like a term frequency. A document holding fewer than two
// query terms scores 0.
func (p BM25) Proximity(doc []string, terms []string, weights []float64, docLen uint32, avgdl float64) float64 {
	if len(terms) < 2 || len(doc) < 2 {
		return 0
	}
	n := min(len(terms), len(weights), maxProximityTerms)
	var pos [maxProximityTerms][]int32
	found := 0
	for i, t := range doc {
		for j := 0; j < n; j++ {
			if terms[j] == t {
				if len(pos[j]) == 0 {
					found++
				}
				if len(pos[j]) < maxProximityPositions {
					pos[j] = append(pos[j], int32(i))
				}
				break
			}
		}
	}
	if found < 2 {
		return 0
	}
	ratio := 1.0
	if avgdl > 0 {
		ratio = float64(docLen) / avgdl
	}
	k := p.K1 * (1 - p.B + p.B*ratio)
	score := 0.0
	for a := 0; a < n; a++ {
		if len(pos[a]) == 0 {
			continue
		}
		for b := a + 1; b < n; b++ {
			if len(pos[b]) == 0 {
				continue
			}
			acc := 0.0
			for _, pa := range pos[a] {
				for _, pb := range pos[b] {
					d := pb - pa
					if d < 0 {
						d = -d + 1
					}
					if d <= ProximityWindow {
						acc += 1 / float64(d*d)
					}
				}
			}
			if acc > 0 {
				score += min(weights[a], weights[b]) * acc * (p.K1 + 1) / (acc + k)
			}
		}
	}
	return score
}
