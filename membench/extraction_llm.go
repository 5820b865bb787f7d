package membench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/internal/dialoggen"
	"github.com/agentmem/agentmem/internal/llmextract"
	"github.com/agentmem/agentmem/internal/llmsummary"
)

// Deterministic is consolidate.Extract.
type Deterministic struct{}

func (Deterministic) Name() string { return "deterministic" }

func (Deterministic) Extract(_ context.Context, msgs []consolidate.Message, known []consolidate.Fact) ([]consolidate.Fact, error) {
	return consolidate.Extract(msgs, known), nil
}

// LLMStandIn is the LLM extractor (internal/llmextract) against a scripted
// local OpenAI-compatible server (httptest), with the deterministic
// extractor as fallback, as the node runs it. The script answers from the
// generator's ground truth (an oracle: what a good model would say) with
// the faults a real one has: one invented fact in every answer (grounded
// in nothing the user said: the check must drop it) and every
// FaultEvery-th answer not JSON (the fallback must take over). It measures
// the pipeline around the model (prompt, parse, grounding, fallback), not
// a model.
type LLMStandIn struct {
	srv        *httptest.Server
	ex         llmextract.Extractor
	mu         sync.Mutex
	planted    map[string][]standInFact // message id -> facts said there; guarded by mu
	calls      int                      // guarded by mu
	fallbacks  int                      // guarded by mu
	FaultEvery int
}

type standInFact struct {
	key, value, replaces string
}

// NewLLMStandIn starts the scripted server; Close stops it.
func NewLLMStandIn() (*LLMStandIn, error) {
	s := &LLMStandIn{FaultEvery: 5}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	c, err := llmsummary.New(llmsummary.Config{BaseURL: s.srv.URL + "/v1", Model: "stand-in", Timeout: 5 * time.Second, MaxResponseBytes: 1 << 20})
	if err != nil {
		s.srv.Close()
		return nil, err
	}
	s.ex = llmextract.Extractor{Chat: c}
	return s, nil
}

// Close stops the server.
func (s *LLMStandIn) Close() { s.srv.Close() }

func (s *LLMStandIn) Name() string {
	return fmt.Sprintf("LLM stand-in (1 invented fact per answer, 1 answer in %d not JSON)", s.FaultEvery)
}

// Learn gives the script the ground truth of conv.
func (s *LLMStandIn) Learn(conv *dialoggen.Conversation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.planted = map[string][]standInFact{}
	for pi, p := range conv.Planted {
		if p.Owner != 0 {
			continue
		}
		key := p.Kind
		if len(p.Also) > 0 {
			key += "_" + strings.ToLower(strings.ReplaceAll(p.Also[len(p.Also)-1], " ", "_"))
		}
		key = fmt.Sprintf("%s_%d", key, pi)
		for i, v := range p.Values {
			f := standInFact{key: key, value: v}
			if i > 0 {
				f.replaces = p.Values[i-1]
			}
			id := msgID(p.Turns[i])
			s.planted[id] = append(s.planted[id], f)
		}
	}
}

// Extract implements Extractor: the LLM extractor, the deterministic one
// when it fails (facts marked Rule "fallback").
func (s *LLMStandIn) Extract(ctx context.Context, msgs []consolidate.Message, known []consolidate.Fact) ([]consolidate.Fact, error) {
	fs, _, err := s.ex.ExtractFacts(ctx, msgs, known)
	if err != nil {
		s.mu.Lock()
		s.fallbacks++
		s.mu.Unlock()
		fs = consolidate.Extract(msgs, known)
	}
	return fs, nil
}

// Fallbacks counts the extractions the deterministic extractor served.
func (s *LLMStandIn) Fallbacks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fallbacks
}

var idLine = regexp.MustCompile(`(?m)^\[(m\d+)\] USER: `)

func (s *LLMStandIn) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) < 2 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls++
	fault := s.FaultEvery > 0 && s.calls%s.FaultEvery == 0
	type fact struct {
		Subject    string   `json:"subject"`
		Attribute  string   `json:"attribute"`
		Value      string   `json:"value"`
		Type       string   `json:"type"`
		Confidence float64  `json:"confidence"`
		MessageIDs []string `json:"message_ids"`
		Replaces   string   `json:"replaces,omitempty"`
	}
	var out struct {
		Facts []fact `json:"facts"`
	}
	ids := idLine.FindAllStringSubmatch(req.Messages[1].Content, -1)
	for _, m := range ids {
		for _, f := range s.planted[m[1]] {
			out.Facts = append(out.Facts, fact{Subject: "user", Attribute: f.key, Value: f.value, Type: "semantic", Confidence: 0.9,
				MessageIDs: []string{m[1]}, Replaces: f.replaces})
		}
	}
	if len(ids) > 0 { // invented: no user message says it
		out.Facts = append(out.Facts, fact{Subject: "user", Attribute: "favorite_color", Value: "ultraviolet " + strconv.Itoa(s.calls),
			Type: "semantic", Confidence: 0.9, MessageIDs: []string{ids[0][1]}})
	}
	s.mu.Unlock()
	content := "Sure! Here are the facts I found: the user seems nice."
	if !fault {
		b, _ := json.Marshal(out)
		content = string(b)
	}
	resp := map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Markdown prints the extraction table.
func (r *ExtractionReport) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Consolidation: facts extracted into long-term memory (%d conversations, %d sittings = sessions)\n\n", r.Conversations, r.Sittings)
	b.WriteString("Planted facts of the user (internal/dialoggen, first values and corrections); each sitting is a session consolidated at its end; ")
	b.WriteString("the new-session columns ask each single-hop and correction question about the user's own facts in a NEW session (only long-term memory can answer).\n\n")
	b.WriteString("| extractor | extracted | precision | recall | corrections resolved | new session: answer | stale (correction questions) | fallbacks |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Rows {
		fb := "–"
		if strings.HasPrefix(row.Name, "LLM") {
			fb = fmt.Sprintf("%d/%d", row.Fallbacks, row.ExtractRuns)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", row.Name, row.Extracted,
			frac(row.Correct, row.Extracted), frac(row.Recalled, row.Planted), frac(row.Resolved, row.Corrected),
			frac(row.Answered, row.Questions), frac(row.Stale, row.CorrQuestions), fb)
	}
	if len(r.Misses) > 0 {
		b.WriteString("\nSome planted values the deterministic extractor missed:\n\n")
		for _, m := range r.Misses {
			fmt.Fprintf(&b, "- %s\n", m)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func frac(n, d int) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f %% (%d/%d)", 100*float64(n)/float64(d), n, d)
}
