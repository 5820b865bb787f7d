package llmsummary

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func fakeServer(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.BaseURL = srv.URL + "/v1"
	cfg.Model = "test-model"
	cfg.Timeout = 200 * time.Millisecond
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRewriteSendsChatCompletion(t *testing.T) {
	var got chatRequest
	c := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
		_, _ = w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"  short summary "}}]}`))
	})
	out, err := c.Rewrite(context.Background(), "long text", 50)
	if err != nil {
		t.Fatal(err)
	}
	if out != "short summary" {
		t.Fatalf("summary = %q", out)
	}
	if got.Model != "test-model" || got.MaxTokens != 50 || len(got.Messages) != 2 || got.Messages[1].Content != "long text" {
		t.Fatalf("request = %+v", got)
	}
}

func TestRewriteFailures(t *testing.T) {
	cases := map[string]http.HandlerFunc{
		"status 500": func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
		"bad json":   func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{")) },
		"no choices": func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"choices":[]}`)) },
		"slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			c := fakeServer(t, h)
			_, err := c.Rewrite(context.Background(), "text", 10)
			if !errors.Is(err, ErrEndpoint) {
				t.Fatalf("err = %v, want ErrEndpoint", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.Validate() == nil {
		t.Fatal("empty base url accepted")
	}
	cfg.BaseURL = "http://x"
	if cfg.Validate() == nil {
		t.Fatal("empty model accepted")
	}
	cfg.Model = "m"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}
