package swap

import "context"

// Reranker reorders search hits, for instance a cross-encoder behind an API.
// It is optional: the caller keeps the BM25 order when there is no Reranker
// or when Rerank fails.
//
// docs are the texts of the hits in BM25 order. On success order is a
// permutation of a subset of 0..len(docs)-1, best first; an index out of
// range or repeated is a failure the caller must detect (treat it as an
// error and keep BM25 order). An error, including ctx's, says nothing about
// the quality of the hits.
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string) (order []int, err error)
}
