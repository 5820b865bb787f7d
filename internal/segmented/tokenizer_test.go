package segmented

import (
	"net/http"
	"sync"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestTokenizerKnownCounts(t *testing.T) {
	// Any attempt to use the network fails the test: the vocabulary must be
	// embedded in the module.
	old := http.DefaultTransport
	http.DefaultTransport = failingTransport{t}
	defer func() { http.DefaultTransport = old }()
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")

	tok, err := NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]int{
		"":                          0,
		"hello world":               2,
		"Hello, world!":             4,
		"tiktoken is great!":        6,
		"The quick brown fox jumps": 5,
	} {
		if got := tok.Count(text); got != want {
			t.Errorf("Count(%q) = %d, want %d", text, got, want)
		}
	}
	if tok2, _ := NewTokenizer(); tok2 != tok {
		t.Error("NewTokenizer builds a new codec every call")
	}
}

type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("tokenizer tried the network: %s", r.URL)
	return nil, http.ErrNotSupported
}

func TestTokenizerConcurrent(t *testing.T) {
	tok := tokenizerT(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if n := tok.Count("hello world"); n != 2 {
					t.Errorf("concurrent Count = %d", n)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestMessageTokensIncludeCallsAndOverhead(t *testing.T) {
	tok := tokenizerT(t)
	if got := messageTokens(tok, "hello world", nil); got != 2+MessageOverheadTokens {
		t.Fatalf("got %d", got)
	}
	c := call("c1", "search")
	want := uint32(2 + MessageOverheadTokens + tok.Count(c.Name) + tok.Count(c.Arguments))
	if got := messageTokens(tok, "hello world", []*memoryv1.ToolCall{c}); got != want {
		t.Fatalf("with a call: got %d, want %d", got, want)
	}
}
