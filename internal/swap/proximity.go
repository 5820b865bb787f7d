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
	var pp positions
	pp.reset(terms, weights)
	for _, t := range doc {
		pp.add(t)
	}
	return p.proximity(&pp, docLen, avgdl)
}

// proximityPerOccurrence bounds what one occurrence of a query term adds
// to acc(a,b): the other term's occurrences are at distinct positions, at
// most one at each in-order distance 1..5 (Σ 1/d² = 1.4636) and one at
// each reverse distance 1..4, counted 2..5 (Σ = 0.4636): 1.9272, rounded up.
const proximityPerOccurrence = 1.93

// ProximityBound returns an upper bound of Proximity for a document in
// which query term i occurs tf[i] times (0: absent), without reading it:
// acc(a,b) ≤ 1.93 · min(tf_a, tf_b). It is 0 when fewer than two terms
// occur, like Proximity.
func (p BM25) ProximityBound(tf []uint32, weights []float64, docLen uint32, avgdl float64) float64 {
	n := min(len(tf), len(weights), maxProximityTerms)
	ratio := 1.0
	if avgdl > 0 {
		ratio = float64(docLen) / avgdl
	}
	k := p.K1 * (1 - p.B + p.B*ratio)
	bound := 0.0
	for a := 0; a < n; a++ {
		if tf[a] == 0 {
			continue
		}
		for b := a + 1; b < n; b++ {
			if tf[b] == 0 {
				continue
			}
			acc := proximityPerOccurrence * float64(min(tf[a], tf[b], maxProximityPositions))
			bound += min(weights[a], weights[b]) * acc * (p.K1 + 1) / (acc + k)
		}
	}
	return bound
}

// ProximityText is Proximity(Analyze(text), …), faster: ASCII words that
// cannot yield one of the terms (their first letter is none of the terms'
// first letters) are counted as positions without being stemmed.
func (p BM25) ProximityText(text string, terms []string, weights []float64, docLen uint32, avgdl float64) float64 {
	if len(terms) < 2 {
		return 0
	}
	var pp positions
	pp.reset(terms, weights)
	var skip [256]bool
	for i := range skip {
		skip[i] = true
	}
	for _, t := range terms[:pp.n] {
		if t != "" {
			skip[t[0]] = false // a term starting with a non-ASCII byte matches no ASCII word
		}
	}
	forEachTermSkip(text, &skip, pp.add)
	return p.proximity(&pp, docLen, avgdl)
}

// positions collects the positions of the query terms in a document.
type positions struct {
	terms   []string
	weights []float64
	n       int // query terms used, at most maxProximityTerms
	next    int32
	found   int
	pos     [maxProximityTerms][]int32
}

func (pp *positions) reset(terms []string, weights []float64) {
	pp.terms, pp.weights, pp.n = terms, weights, min(len(terms), len(weights), maxProximityTerms)
}

// add records the next term of the document ("" is a term matching none).
func (pp *positions) add(t string) {
	i := pp.next
	pp.next++
	if t == "" {
		return
	}
	for j := 0; j < pp.n; j++ {
		if pp.terms[j] == t {
			if len(pp.pos[j]) == 0 {
				pp.found++
			}
			if len(pp.pos[j]) < maxProximityPositions {
				pp.pos[j] = append(pp.pos[j], i)
			}
			return
		}
	}
}

// proximity scores the collected positions (see Proximity).
func (p BM25) proximity(pp *positions, docLen uint32, avgdl float64) float64 {
	if pp.found < 2 {
		return 0
	}
	ratio := 1.0
	if avgdl > 0 {
		ratio = float64(docLen) / avgdl
	}
	k := p.K1 * (1 - p.B + p.B*ratio)
	score := 0.0
	for a := 0; a < pp.n; a++ {
		if len(pp.pos[a]) == 0 {
			continue
		}
		for b := a + 1; b < pp.n; b++ {
			if len(pp.pos[b]) == 0 {
				continue
			}
			acc := 0.0
			for _, pa := range pp.pos[a] {
				for _, pb := range pp.pos[b] {
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
				score += min(pp.weights[a], pp.weights[b]) * acc * (p.K1 + 1) / (acc + k)
			}
		}
	}
	return score
}
