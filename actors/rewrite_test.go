package actors

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/llmsummary"
	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// llmServer is a local OpenAI-compatible endpoint answering with reply (or
// failing with status 500 when reply is empty).
func llmServer(t *testing.T, reply string, calls *atomic.Int32) *llmsummary.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if reply == "" {
			http.Error(w, "model overloaded", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%q}}]}`, reply)
	}))
	t.Cleanup(srv.Close)
	cfg := llmsummary.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.Timeout = srv.URL+"/v1", "fake", time.Second
	c, err := llmsummary.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fillUntilCompressed(t *testing.T, h *harness, id string) {
	t.Helper()
	h.must(t, id, &memoryv1.CreateSessionRequest{SystemPrompt: "sys", MaxContextTokens: 1200, ReservedOutputTokens: 200})
	for i := range 40 {
		role := memoryv1.Role_ROLE_USER
		if i%2 == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		h.must(t, id, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{Role: role,
			Content: fmt.Sprintf("turn %d: Alice asked about invoice %d and Bob decided to refund %d dollars %s", i, 1000+i, 10*i, strings.Repeat("detail ", 20))}}})
	}
}

func summarySources(t *testing.T, h *harness, id string) map[string]int {
	t.Helper()
	snap, err := h.dir.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range snap.GetL2() {
		out[s.GetSource()]++
	}
	for _, e := range snap.GetL1() {
		if s := e.GetSummary(); s != nil {
			out[s.GetSource()]++
		}
	}
	return out
}

// TestRewriteBesideTheActor checks LLM rewrites come back as stored events
// that keep the budget, and that the log replays to the same state.
func TestRewriteBesideTheActor(t *testing.T) {
	var calls atomic.Int32
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	h.dir.deps.Rewriter = llmServer(t, "Alice: invoice refunds.", &calls)
	fillUntilCompressed(t, h, "rw1")
	deadline := time.Now().Add(10 * time.Second)
	for summarySources(t, h, "rw1")["llm"] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no summary rewritten after %d endpoint calls: %v", calls.Load(), summarySources(t, h, "rw1"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cx := h.must(t, "rw1", &memoryv1.ContextRequest{}).(*memoryv1.ContextReply)
	if cx.GetUsage().GetUsed() > cx.GetUsage().GetBudget() {
		t.Fatalf("budget broken: %v", cx.GetUsage())
	}
	// Rewrites of other summaries may still be landing: compare the log
	// with a live state that did not move while the log was read.
	for attempt := 0; ; attempt++ {
		before := h.live(t, "rw1")
		got := snapBytes(t, h.fromLog(t, "rw1", false).Snapshot())
		after := h.live(t, "rw1")
		if string(before) != string(after) {
			if attempt == 50 {
				t.Fatal("the session never stopped changing")
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if string(got) != string(after) {
			t.Fatal("state from the log differs from the live state after rewrites")
		}
		return
	}
}

// TestRewriteFailureKeepsExtractive checks a failing endpoint changes nothing.
func TestRewriteFailureKeepsExtractive(t *testing.T) {
	var calls atomic.Int32
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	h.dir.deps.Rewriter = llmServer(t, "", &calls)
	fillUntilCompressed(t, h, "rw2")
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the endpoint was never called")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	src := summarySources(t, h, "rw2")
	if src["llm"] != 0 || src["extractive"] == 0 {
		t.Fatalf("summary sources %v, want extractive only", src)
	}
}
