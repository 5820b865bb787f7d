package embed

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer answers /v1/embeddings like an OpenAI-compatible server; answer
// may rewrite the response.
func fakeServer(t *testing.T, answer func(req request, resp *response) int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request line", http.StatusBadRequest)
			return
		}
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var resp response
		for i, in := range req.Input {
			resp.Data = append(resp.Data, struct {
				Index     int       `json:"index"`
				Embedding []float64 `json:"embedding"`
			}{i, []float64{float64(len(in)), 1, 0}})
		}
		status := http.StatusOK
		if answer != nil {
			status = answer(req, &resp)
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func testConfig(url string) Config {
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.APIKey, cfg.BatchSize, cfg.MaxInputBytes = url+"/v1", "m", "k", 2, 5
	return cfg
}

func TestEmbed(t *testing.T) {
	var got []request
	srv, calls := fakeServer(t, func(req request, _ *response) int {
		got = append(got, req)
		return http.StatusOK
	})
	c, err := New(testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := c.Embed(context.Background(), []string{"a", "bbb", "héllo wörld", ""})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || len(vecs) != 4 {
		t.Fatalf("%d calls, %d vectors", calls.Load(), len(vecs))
	}
	// Batches of 2, inputs cut at 5 bytes on a rune boundary, empty sent as " ".
	if got[0].Model != "m" || got[0].EncodingFormat != "float" || strings.Join(got[0].Input, "|") != "a|bbb" ||
		strings.Join(got[1].Input, "|") != "héll| " {
		t.Fatalf("requests %+v", got)
	}
	for i, v := range vecs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-6 {
			t.Fatalf("vector %d not unit: %v", i, v)
		}
	}
	// Out-of-order indexes are put back in order.
	srv2, _ := fakeServer(t, func(_ request, resp *response) int {
		resp.Data[0], resp.Data[1] = resp.Data[1], resp.Data[0]
		return http.StatusOK
	})
	c2, _ := New(testConfig(srv2.URL))
	v2, err := c2.Embed(context.Background(), []string{"a", "bbb"})
	if err != nil || v2[0][0] >= v2[1][0] {
		t.Fatalf("reordered: %v, %v", v2, err)
	}
}

func TestEmbedFailures(t *testing.T) {
	for name, answer := range map[string]func(request, *response) int{
		"status":     func(request, *response) int { return http.StatusServiceUnavailable },
		"count":      func(_ request, r *response) int { r.Data = r.Data[:1]; return http.StatusOK },
		"index":      func(_ request, r *response) int { r.Data[1].Index = 0; return http.StatusOK },
		"zero":       func(_ request, r *response) int { r.Data[0].Embedding = []float64{0, 0, 0}; return http.StatusOK },
		"dimensions": func(_ request, r *response) int { r.Data[1].Embedding = []float64{1, 2}; return http.StatusOK },
		"empty":      func(_ request, r *response) int { r.Data[0].Embedding = nil; return http.StatusOK },
	} {
		srv, _ := fakeServer(t, answer)
		c, _ := New(testConfig(srv.URL))
		if _, err := c.Embed(context.Background(), []string{"a", "b"}); !errors.Is(err, ErrEndpoint) {
			t.Errorf("%s: err = %v, want ErrEndpoint", name, err)
		}
	}
	// Configured dimensions are checked.
	srv, _ := fakeServer(t, nil)
	cfg := testConfig(srv.URL)
	cfg.Dimensions = 4
	c, _ := New(cfg)
	if _, err := c.Embed(context.Background(), []string{"a"}); !errors.Is(err, ErrEndpoint) {
		t.Errorf("dimension mismatch: %v", err)
	}
	// A dead endpoint, and a cancelled context.
	dead := testConfig("http://127.0.0.1:1")
	dead.Timeout = time.Second
	c, _ = New(dead)
	if _, err := c.Embed(context.Background(), []string{"a"}); !errors.Is(err, ErrEndpoint) {
		t.Errorf("dead endpoint: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, _ = New(testConfig(srv.URL))
	if _, err := c.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"base_url":   func(c *Config) { c.BaseURL = "ftp://x" },
		"model":      func(c *Config) { c.Model = "" },
		"timeout":    func(c *Config) { c.Timeout = 0 },
		"batch_size": func(c *Config) { c.BatchSize = 0 },
		"dimensions": func(c *Config) { c.Dimensions = -1 },
	} {
		cfg := testConfig("http://x")
		mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := testConfig("http://x").Validate(); err != nil {
		t.Fatal(err)
	}
}
