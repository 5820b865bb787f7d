// Package rerank reorders a search's hits by an optional reranker (a
// cross-encoder behind an API), keeping the BM25 order whenever the
// reranker fails or answers something that is not an order of the hits.
package rerank

import (
	"context"
	"log/slog"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Reranker reorders search hits (optional); on failure BM25 order stands.
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string) (order []int, err error)
}

// Hits applies r's order to hits, bounded by timeout, and reports whether
// it did; it keeps BM25 order (logged to logger) when r fails or answers
// an order that is not a permutation of the hits.
func Hits(ctx context.Context, r Reranker, timeout time.Duration, logger *slog.Logger, query string, hits []*memoryv1.SearchHit) ([]*memoryv1.SearchHit, bool) {
	docs := make([]string, len(hits))
	for i, h := range hits {
		docs[i] = h.GetMessage().GetContent() + h.GetSummary().GetText() // one of them is set
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	order, err := r.Rerank(rctx, query, docs)
	if err != nil || len(order) != len(hits) {
		logger.Warn("rerank failed; keeping BM25 order", "err", err, "order", len(order), "hits", len(hits))
		return hits, false
	}
	seen := make([]bool, len(hits))
	out := make([]*memoryv1.SearchHit, 0, len(hits))
	for _, i := range order {
		if i < 0 || i >= len(hits) || seen[i] {
			logger.Warn("rerank answered a bad order; keeping BM25 order")
			return hits, false
		}
		seen[i] = true
		out = append(out, hits[i])
	}
	return out, true
}
