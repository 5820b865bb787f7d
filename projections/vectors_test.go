package projections

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/swap"
)

// fakeEmbedder is a deterministic stand-in for an embeddings model: a
// hashed bag of words over 32 dimensions, with a few synonyms sharing a
// dimension (so that "automobile" is near "car" while BM25 sees nothing in
// common). It can fail, or block until released.
type fakeEmbedder struct {
	mu    sync.Mutex
	fail  bool
	block chan struct{} // if not nil, Embed waits for it to close
	calls atomic.Int32
}

var fakeSynonyms = map[string]string{"automobil": "car", "vehicl": "car", "pup": "dog", "puppi": "dog"}

func fakeVector(text string) []float32 {
	v := make([]float64, 32)
	for _, t := range swap.Analyze(text) {
		if s, ok := fakeSynonyms[t]; ok {
			t = s
		}
		if swap.IsStopTerm(t) {
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(t))
		v[h.Sum32()%32]++
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	out := make([]float32, len(v))
	for i, x := range v {
		if n > 0 {
			out[i] = float32(x / math.Sqrt(n))
		} else if i == 0 {
			out[i] = 1
		}
	}
	return out
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.calls.Add(1)
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return nil, errors.New("fake endpoint down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeVector(t)
	}
	return out, nil
}

// runIndexer runs an indexer until the test ends.
func runIndexer(t *testing.T, s *Store, emb Embedder, model string) {
	t.Helper()
	ix, err := NewVectorIndexer(VectorConfig{Model: model, Batch: 3, Poll: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}, s, emb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ix.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("indexer: %v", err)
		}
	})
}

func waitVectors(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, got, _, err := s.VectorStats()
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d vectors, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestVectorSearchFusion(t *testing.T) {
	l := newLogBuilder(t)
	l.create("v1", "u", "")
	l.create("v2", "u", "")
	l.create("w1", "other", "")
	l.appendMsgs("v1", "My car broke down on the highway", "The weather was lovely", "We bought a new sofa")
	l.appendMsgs("v2", "Taking the puppy to the vet tomorrow")
	l.appendMsgs("w1", "another user's car")
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	before, err := s.Digest()
	if err != nil {
		t.Fatal(err)
	}
	emb := &fakeEmbedder{}
	runIndexer(t, s, emb, "fake-1")
	waitVectors(t, s, 5)
	if model, n, cursor, _ := s.VectorStats(); model != "fake-1" || n != 5 || cursor != 5 {
		t.Fatalf("VectorStats = %s %d %d", model, n, cursor)
	}
	// Vectors are not part of the log's read model: Digest unchanged.
	after, _ := s.Digest()
	if diff := VerifyDigests(before, after); diff != nil {
		t.Fatalf("Digest changed with vectors: %v", diff)
	}

	// BM25 alone finds nothing for "automobile"; the vector finds the car,
	// of this user only (USER scope) or this session only (SESSION).
	q := "automobile"
	if hits, _ := s.Search("v1", scopeUser, q, 0); len(hits) != 0 {
		t.Fatalf("BM25 found %v", hitIDs(hits))
	}
	hits, err := s.SearchWith("v2", scopeUser, q, 3, SearchOptions{QueryVector: fakeVector(q)})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); len(got) != 3 || got[0] != "v1-m1" || hits[0].GetScore() != 1.0/(RRFK+1) {
		t.Fatalf("fused USER hits = %v (score %v)", got, hits[0].GetScore())
	}
	for _, h := range hits {
		if h.GetSessionId() == "w1" {
			t.Fatalf("another user's vector: %v", hitIDs(hits))
		}
	}
	hits, _ = s.SearchWith("v2", scopeSession, q, 0, SearchOptions{QueryVector: fakeVector(q)})
	if got := hitIDs(hits); len(got) != 1 || got[0] != "v2-m1" {
		t.Fatalf("fused SESSION hits = %v", got)
	}
	// A document in both rankings outranks one in either: "puppy vet".
	q = "pup vet"
	hits, _ = s.SearchWith("v1", scopeUser, q, 0, SearchOptions{QueryVector: fakeVector(q)})
	if got := hitIDs(hits); len(got) == 0 || got[0] != "v2-m1" || hits[0].GetScore() != 2.0/(RRFK+1) {
		t.Fatalf("fused = %v", got)
	}
	// Plain ignores the vector; a vector of another dimension is skipped.
	if hits, _ := s.SearchWith("v1", scopeUser, "automobile", 0, SearchOptions{Plain: true, QueryVector: fakeVector("car")}); len(hits) != 0 {
		t.Fatalf("plain used the vector: %v", hitIDs(hits))
	}
	if hits, _ := s.SearchWith("v1", scopeUser, "automobile", 0, SearchOptions{QueryVector: []float32{1, 0}}); len(hits) != 0 {
		t.Fatalf("wrong dimension matched: %v", hitIDs(hits))
	}
}

// TestVectorIndexerNotUnderWriteLock: while the endpoint hangs, the
// projection keeps applying batches (the indexer holds no transaction
// during Embed); a failing endpoint is retried and the documents appended
// meanwhile get their vectors once it is back; a new model drops the old
// vectors.
func TestVectorIndexerNotUnderWriteLock(t *testing.T) {
	l := newLogBuilder(t)
	l.create("v1", "u", "")
	l.appendMsgs("v1", "first message", "second message")
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	l.recs = l.recs[:0]

	release := make(chan struct{})
	emb := &fakeEmbedder{block: release}
	runIndexer(t, s, emb, "fake-1")
	for emb.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// Embed is blocked: ApplyBatch must still commit.
	applied := make(chan error, 1)
	l.appendMsgs("v1", "third message")
	go func() { applied <- s.ApplyBatch(l.recs) }()
	select {
	case err := <-applied:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ApplyBatch blocked while the embedder hangs")
	}
	l.recs = l.recs[:0]
	// The endpoint fails, then comes back.
	emb.mu.Lock()
	emb.fail, emb.block = true, nil
	emb.mu.Unlock()
	close(release)
	for emb.calls.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	if _, n, _, _ := s.VectorStats(); n != 0 {
		t.Fatalf("%d vectors while failing", n)
	}
	if hits, _ := s.SearchWith("v1", scopeSession, "third", 0, SearchOptions{QueryVector: fakeVector("third")}); len(hitIDs(hits)) != 1 {
		t.Fatalf("search without vectors = %v", hitIDs(hits))
	}
	emb.mu.Lock()
	emb.fail = false
	emb.mu.Unlock()
	waitVectors(t, s, 3)
}

func TestVectorModelChange(t *testing.T) {
	l := newLogBuilder(t)
	l.create("v1", "u", "")
	l.appendMsgs("v1", "first message", "second message")
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	if err := s.useVectorModel("a"); err != nil {
		t.Fatal(err)
	}
	docs, err := s.pendingVectorDocs(10)
	if err != nil || len(docs) != 2 {
		t.Fatalf("pending = %v, %v", docs, err)
	}
	if err := s.putVectors("a", docs, [][]float32{fakeVector("x"), fakeVector("y")}); err != nil {
		t.Fatal(err)
	}
	if docs, _ := s.pendingVectorDocs(10); len(docs) != 0 {
		t.Fatalf("pending after put = %v", docs)
	}
	if err := s.useVectorModel("a"); err != nil { // same model: kept
		t.Fatal(err)
	}
	if _, n, _, _ := s.VectorStats(); n != 2 {
		t.Fatalf("same model: %d vectors", n)
	}
	if err := s.useVectorModel("b"); err != nil {
		t.Fatal(err)
	}
	if model, n, cursor, _ := s.VectorStats(); model != "b" || n != 0 || cursor != 0 {
		t.Fatalf("new model: %s %d %d", model, n, cursor)
	}
	if err := s.putVectors("a", docs, [][]float32{fakeVector("x"), fakeVector("y")}); !errors.Is(err, errVectorModel) {
		t.Fatalf("put with the old model: %v", err)
	}
}
