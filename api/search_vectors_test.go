package api_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// fakeEmbeddings is a local OpenAI-compatible /v1/embeddings server: a
// hashed bag of lower-cased words, with "automobile" and "car" on the same
// dimension (a synonym BM25 cannot see). down makes it answer 503.
func fakeEmbeddings(t *testing.T) (*httptest.Server, *atomic.Bool, *atomic.Int32) {
	t.Helper()
	var down atomic.Bool
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if down.Load() || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "fake-embed" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		out := struct {
			Data []datum `json:"data"`
		}{}
		for i, in := range req.Input {
			v := make([]float64, 16)
			v[0] = 0.01
			for _, w := range strings.Fields(strings.ToLower(in)) {
				w = strings.Trim(w, ".,?!:")
				if w == "automobile" {
					w = "car"
				}
				h := fnv.New32a()
				h.Write([]byte(w))
				v[1+h.Sum32()%15] += 1
			}
			out.Data = append(out.Data, datum{i, v})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv, &down, &calls
}

// TestSearchFusesEmbeddings: with an embeddings endpoint configured, every
// message is embedded beside the projector and a query's nearest vectors
// are fused with BM25 ("automobile" finds the car, which BM25 cannot);
// with the endpoint down, search still answers by BM25 alone.
func TestSearchFusesEmbeddings(t *testing.T) {
	srv, down, calls := fakeEmbeddings(t)
	_, nc := node.StartForTest(t, func(c *node.Config) {
		c.Embeddings = embed.DefaultConfig()
		c.Embeddings.BaseURL, c.Embeddings.Model, c.Embeddings.Timeout = srv.URL+"/v1", "fake-embed", 2*time.Second
	})
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "e1", &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"My car broke down on the highway", "The weather is lovely", "We bought a sofa"} {
		if _, err := c.AppendMessages(ctx, "e1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text, Name: "Ann"}); err != nil {
			t.Fatal(err)
		}
	}
	// BM25 has no "automobile"; once the vectors are in, the car is found.
	deadline := time.Now().Add(15 * time.Second)
	for {
		rep, err := c.Search(ctx, "e1", &memoryv1.SearchRequest{Query: "automobile trouble", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.GetHits()) == 1 {
			if h := rep.GetHits()[0]; h.GetMessage().GetContent() != "My car broke down on the highway" || math.Abs(h.GetScore()-1.0/61) > 1e-12 {
				t.Fatalf("hit %v", h)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no vector hit before the deadline")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if calls.Load() < 2 {
		t.Fatalf("%d endpoint calls", calls.Load())
	}
	// Endpoint down: BM25 alone, no error.
	down.Store(true)
	rep, err := c.Search(ctx, "e1", &memoryv1.SearchRequest{Query: "weather"})
	if err != nil || len(rep.GetHits()) != 1 || rep.GetHits()[0].GetMessage().GetContent() != "The weather is lovely" {
		t.Fatalf("endpoint down: %v, %v", rep, err)
	}
	if rep, err := c.Search(ctx, "e1", &memoryv1.SearchRequest{Query: "automobile"}); err != nil || len(rep.GetHits()) != 0 {
		t.Fatalf("endpoint down, vector-only query: %v, %v", rep, err)
	}
}

// TestSearchWithoutEmbeddings: no endpoint configured, nothing embedded:
// BM25 only (the same query finds nothing).
func TestSearchWithoutEmbeddings(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "e2", &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	ap, err := c.AppendMessages(ctx, "e2", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "My car broke down"})
	if err != nil {
		t.Fatal(err)
	}
	seq := ap.GetResult().GetSeq()
	if rep, err := c.Search(ctx, "e2", &memoryv1.SearchRequest{Query: "car", MinSeq: seq}); err != nil || len(rep.GetHits()) != 1 {
		t.Fatalf("car: %v, %v", rep, err)
	}
	if rep, err := c.Search(ctx, "e2", &memoryv1.SearchRequest{Query: "automobile", MinSeq: seq}); err != nil || len(rep.GetHits()) != 0 {
		t.Fatalf("automobile: %v, %v", rep, err)
	}
}

// TestSearchSpeakerAndSaidTime: imported history through the API (name and
// said_unix_nano on MessageInput) is searchable by speaker and by day, and
// the hit carries the time it was said.
func TestSearchSpeakerAndSaidTime(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "h1", &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	may8 := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC).UnixNano()
	jun2 := time.Date(2023, 6, 2, 9, 0, 0, 0, time.UTC).UnixNano()
	ap, err := c.AppendMessages(ctx, "h1",
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Name: "Caroline", Content: "I went to the support group", SaidUnixNano: may8},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Name: "Melanie", Content: "I went to the support group too", SaidUnixNano: may8},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Name: "Caroline", Content: "Back at the support group", SaidUnixNano: jun2},
	)
	if err != nil {
		t.Fatal(err)
	}
	seq := ap.GetResult().GetSeq()
	for q, want := range map[string]string{
		"What did Melanie say about the support group?":        "I went to the support group too",
		"What did Caroline say about the group on 2023-06-02?": "Back at the support group",
		"support group, 8 May 2023, Caroline":                  "I went to the support group",
	} {
		rep, err := c.Search(ctx, "h1", &memoryv1.SearchRequest{Query: q, MinSeq: seq})
		if err != nil || len(rep.GetHits()) == 0 {
			t.Fatalf("%q: %v, %v", q, rep, err)
		}
		if m := rep.GetHits()[0].GetMessage(); m.GetContent() != want || m.GetSaidUnixNano() == 0 || m.GetCreatedUnixNano() == 0 {
			t.Errorf("%q: top hit %v, want %q", q, m, want)
		}
	}
	// A negative time is refused, naming the field.
	_, err = c.AppendMessages(ctx, "h1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "x", SaidUnixNano: -5})
	if err == nil || !strings.Contains(err.Error(), "said_unix_nano") {
		t.Fatalf("negative said_unix_nano: %v", err)
	}
}
