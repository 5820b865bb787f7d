package llmextract_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/internal/llmextract"
	"github.com/agentmem/agentmem/internal/llmsummary"
)

// server answers every chat completion with content.
func server(t *testing.T, content string, status int) *llmextract.Extractor {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 ||
			(req.Messages[0].Content == llmextract.Instruction && !strings.Contains(req.Messages[1].Content, "[u1] USER:")) {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if status != http.StatusOK {
			http.Error(w, "overloaded", status)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}}})
	}))
	t.Cleanup(srv.Close)
	c, err := llmsummary.New(llmsummary.Config{BaseURL: srv.URL, Model: "m", Timeout: 2 * time.Second, MaxResponseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return &llmextract.Extractor{Chat: c}
}

var msgs = []consolidate.Message{
	{ID: "u1", Seq: 1, User: true, Text: "I moved to Porto last month and my daughter is called Ana."},
	{ID: "a1", Seq: 2, Text: "Lovely! I live in the cloud."},
}

// TestLLMExtract: grounded facts that cite user messages are kept; an
// invented one, one citing the assistant and one citing nothing are not.
func TestLLMExtract(t *testing.T) {
	ex := server(t, "```json\n"+`{"facts":[
		{"subject":"user","attribute":"Home City","value":"Porto","type":"semantic","confidence":0.9,"message_ids":["u1"]},
		{"subject":"daughter","attribute":"name","value":"Ana","type":"semantic","confidence":0.95,"message_ids":["u1"]},
		{"subject":"user","attribute":"favorite_color","value":"ultraviolet","type":"semantic","message_ids":["u1"]},
		{"subject":"user","attribute":"home","value":"the cloud","type":"semantic","message_ids":["a1"]},
		{"subject":"user","attribute":"pet","value":"Rex","type":"semantic","message_ids":[]}
	]}`+"\n```", http.StatusOK)
	fs, name, err := ex.ExtractFacts(context.Background(), msgs, nil)
	if err != nil || name != "llm" {
		t.Fatal(err, name)
	}
	if len(fs) != 2 || fs[0].Key() != "fact/user/home_city" || fs[0].Value != "Porto" || fs[1].Key() != "fact/daughter/name" ||
		fs[0].MessageIDs[0] != "u1" || fs[0].Context == "" {
		t.Fatalf("facts %+v", fs)
	}
}

// TestLLMExtractFailures: an endpoint error, an answer that is not JSON and
// an answer of only invented facts are errors (the caller falls back).
func TestLLMExtractFailures(t *testing.T) {
	for name, ex := range map[string]*llmextract.Extractor{
		"status 503": server(t, "", http.StatusServiceUnavailable),
		"prose":      server(t, "Sure! The user likes Porto.", http.StatusOK),
		"invented":   server(t, `{"facts":[{"subject":"user","attribute":"x","value":"zebra","message_ids":["u1"]}]}`, http.StatusOK),
	} {
		if _, _, err := ex.ExtractFacts(context.Background(), msgs, nil); err == nil {
			t.Errorf("%s: no error", name)
		} else if name != "status 503" && !errors.Is(err, llmextract.ErrAnswer) {
			t.Errorf("%s: %v, want ErrAnswer", name, err)
		}
	}
}

// TestMerge: the merged value is used when it holds words of the values;
// an invented one is refused.
func TestMerge(t *testing.T) {
	m := llmextract.Merger{Chat: server(t, `{"value":"Bergen"}`, http.StatusOK).Chat}
	if v, err := m.MergeFact(context.Background(), "fact/user/home_city", "Oslo", "Bergen"); err != nil || v != "Bergen" {
		t.Fatalf("%q %v", v, err)
	}
	m = llmextract.Merger{Chat: server(t, `{"value":"Atlantis"}`, http.StatusOK).Chat}
	if _, err := m.MergeFact(context.Background(), "fact/user/home_city", "Oslo", "Bergen"); !errors.Is(err, llmextract.ErrAnswer) {
		t.Fatalf("invented value: %v", err)
	}
}
