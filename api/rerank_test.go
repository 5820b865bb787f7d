package api_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// reverser reverses the BM25 order, or fails, or answers a bad order.
type reverser struct{ mode string }

func (r reverser) Rerank(_ context.Context, _ string, docs []string) ([]int, error) {
	switch r.mode {
	case "fail":
		return nil, errors.New("reranker down")
	case "bad":
		return make([]int, len(docs)), nil // all zeros: not a permutation
	}
	order := make([]int, len(docs))
	for i := range order {
		order[i] = len(docs) - 1 - i
	}
	return order, nil
}

func searchIDs(t *testing.T, mode string) ([]string, bool) {
	t.Helper()
	_, nc := node.StartForTest(t, func(c *node.Config) { c.Reranker = reverser{mode} })
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "r1", &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"deploy failed deploy failed deploy", "deploy failed once", "the deploy"} {
		if _, err := c.AppendMessages(ctx, "r1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := c.Search(ctx, "r1", &memoryv1.SearchRequest{Query: "deploy failed"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range rep.GetHits() {
		ids = append(ids, h.GetMessage().GetId())
	}
	return ids, rep.GetReranked()
}

// TestRerankFallsBackToBM25 checks the reranker's order is used when it
// answers a permutation, and BM25 order is kept when it fails or answers
// something that is not a permutation of the hits.
func TestRerankFallsBackToBM25(t *testing.T) {
	bm25, reranked := searchIDs(t, "fail")
	if reranked || len(bm25) != 3 || bm25[0] != "m1" {
		t.Fatalf("failing reranker: hits %v reranked=%v, want BM25 order starting with m1", bm25, reranked)
	}
	bad, reranked := searchIDs(t, "bad")
	if reranked || !slices.Equal(bad, bm25) {
		t.Fatalf("bad order: hits %v reranked=%v, want BM25 order %v", bad, reranked, bm25)
	}
	rev, reranked := searchIDs(t, "reverse")
	want := slices.Clone(bm25)
	slices.Reverse(want)
	if !reranked || !slices.Equal(rev, want) {
		t.Fatalf("reranker order: hits %v reranked=%v, want %v", rev, reranked, want)
	}
}
