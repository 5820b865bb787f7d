package projections

import (
	"cmp"
	"slices"

	"github.com/agentmem/agentmem/internal/swap"
)

// Pseudo-relevance feedback (Corpus.Feedback): a question often shares few
// words with the turn that answers it ("how does Sam unwind?" for
// "weekends at the allotment keep me sane"), but the best hits of
// the first ranking talk about the same thing in the words the
// conversation used. The query is expanded once with the rarest terms of
// those hits, weighed below the query's own terms, and ranked again. It is
// deterministic (the terms are chosen by idf, ties by the term) and reads
// feedbackTerms more posting lists.
const (
	// feedbackDocs is how many of the best hits lend their terms.
	feedbackDocs = 3
	// feedbackTerms bounds the terms added.
	feedbackTerms = 10
	// feedbackScale weighs an added term's BM25 score (the query's own
	// weigh 1; related words, ranking.expand, 0.4).
	feedbackScale = 0.2
)

// feedback returns the expansion clauses of q from the best candidates of
// its first ranking: the terms of the best feedbackDocs (not in q, not stop
// terms, in at least two documents of the corpus and at most a tenth of
// them), by their idf times the number of those candidates holding them,
// at most feedbackTerms, each scaled by feedbackScale.
func (r *ranker) feedback(q swap.Query, cands []*candidate) ([]clause, error) {
	inQuery := make(map[string]bool, len(q.Terms))
	for _, t := range q.Terms {
		inQuery[t.Term] = true
	}
	held := map[string]int{} // term → candidates holding it
	for _, c := range cands[:min(feedbackDocs, len(cands))] {
		if err := r.read(c); err != nil {
			return nil, err
		}
		if c.d.sum != nil {
			continue
		}
		tf, _ := swap.TermFreqs(c.d.content)
		for t := range tf {
			if !inQuery[t] && !swap.IsStopTerm(t) {
				held[t]++
			}
		}
	}
	type weighed struct {
		clause
		rank float64
	}
	var out []weighed
	for t, k := range held {
		df := termDF(r.terms, termKey(r.userKey, t))
		if df < 2 || df*10 > r.n {
			continue // a word of one document, or a common one
		}
		idf := r.bm.IDF(r.n, df)
		out = append(out, weighed{clause{term: t, idf: idf, scale: feedbackScale}, idf * float64(k)})
	}
	slices.SortFunc(out, func(a, b weighed) int {
		if c := cmp.Compare(b.rank, a.rank); c != 0 {
			return c
		}
		return cmp.Compare(a.term, b.term)
	})
	clauses := make([]clause, 0, min(len(out), feedbackTerms))
	for _, w := range out[:min(len(out), feedbackTerms)] {
		clauses = append(clauses, w.clause)
	}
	return clauses, nil
}
