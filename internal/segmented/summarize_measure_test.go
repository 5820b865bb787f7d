package segmented

import (
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// summarizeFigures summarizes runs of generated messages as the policy does
// (summarizeRun: the range header, the summaryTarget limit) and
// returns the compression ratio (covered tokens / summary tokens, both as
// stored) and the share of planted keys found in the summaries.
func summarizeFigures(t *testing.T, seed uint64, runs, runLen int, d density) (ratio, retention float64, worst string) {
	t.Helper()
	s := mustCreate(t, &memoryv1.CreateSessionRequest{})
	env := testEnv(t)
	c := newCorpus(seed)
	var covered, summary, kept, planted int
	worstRetention := 2.0
	for r := range runs {
		ins, keys := c.messages(runLen, d)
		run := make([]*memoryv1.L1Entry, len(ins))
		for i, in := range ins {
			m := &memoryv1.Message{Id: "x", Seq: uint64(i + 1), Role: in.Role, Content: in.Content, ToolCalls: in.ToolCalls, ToolCallId: in.ToolCallId}
			m.Tokens = messageTokens(env.Tokenizer, in.Content, in.ToolCalls)
			run[i] = &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Message{Message: m}}
		}
		sum := summarizeRun(s, run, env)
		if sum == nil {
			t.Fatalf("run %d: no summary", r)
		}
		covered += int(sum.CoveredTokens)
		summary += int(sum.Tokens)
		k, p := 0, 0
		for _, ks := range keys {
			for _, key := range ks {
				p++
				if strings.Contains(sum.Text, key) {
					k++
				}
			}
		}
		kept += k
		planted += p
		if p > 0 && float64(k)/float64(p) < worstRetention {
			worstRetention = float64(k) / float64(p)
			worst = sum.Text
		}
	}
	return float64(covered) / float64(summary), float64(kept) / float64(planted), worst
}

// TestSummarizerRetentionAndRatio measures the extractive summarizer on
// generated conversations of three densities (see corpus_test.go). The
// figures are logged; the asserted floors are well below what was measured
// (see the commit), so they catch a regression, not noise.
func TestSummarizerRetentionAndRatio(t *testing.T) {
	cases := []struct {
		name     string
		d        density
		minRatio float64
		minKept  float64
	}{
		// Measured (seed 42, 200 runs each of 4, 6 and 8 messages):
		// chatty 7.8-9.3x and 99.9%; conversational 3.4-3.6x and
		// 94-95% (its facts are a fifth of its tokens: the cap of a
		// third binds); fact-dense 2.7-2.9x and 61% (a third of the
		// tokens cannot hold most facts of text that is all facts).
		{"chatty", chatty, 6, 0.95},
		{"conversational", conversational, 3, 0.90},
		{"fact-dense", factDense, 2.3, 0.50},
	}
	for _, tc := range cases {
		for _, runLen := range []int{4, 6, 8} {
			ratio, kept, worst := summarizeFigures(t, 42, 200, runLen, tc.d)
			t.Logf("%-15s runs of %d messages: compression %.1fx, key facts kept %.1f%%", tc.name, runLen, ratio, 100*kept)
			if ratio < tc.minRatio || kept < tc.minKept {
				t.Errorf("%s: compression %.1fx (floor %.1fx), kept %.1f%% (floor %.0f%%); worst summary:\n%s", tc.name, ratio, tc.minRatio, 100*kept, 100*tc.minKept, worst)
			}
		}
	}
}
