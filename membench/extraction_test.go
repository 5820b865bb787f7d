package membench

import (
	"context"
	"strings"
	"testing"
)

// TestExtractionTable runs the extraction table on one short conversation:
// consolidation off answers nothing in a new session, the extractors read
// planted facts, the stand-in's faults make the fallback serve, and the
// table prints a row per extractor.
func TestExtractionTable(t *testing.T) {
	cfg := DefaultQuestionConfig()
	cfg.Conversations, cfg.Dialog.Sittings = 1, 10
	llm, err := NewLLMStandIn()
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	rep, err := RunExtraction(context.Background(), cfg, []Extractor{Deterministic{}, llm})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 3 || rep.Sittings != 10 {
		t.Fatalf("rows %d sittings %d", len(rep.Rows), rep.Sittings)
	}
	off, det, lr := rep.Rows[0], rep.Rows[1], rep.Rows[2]
	if off.Answered != 0 || off.Extracted != 0 || off.Questions == 0 {
		t.Errorf("consolidation off: %+v", off)
	}
	if det.Extracted == 0 || det.Recalled == 0 || det.Correct > det.Extracted || det.Recalled > det.Planted {
		t.Errorf("deterministic: %+v", det)
	}
	if lr.Fallbacks == 0 || lr.ExtractRuns != 10 {
		t.Errorf("stand-in: %+v (one answer in %d is not JSON)", lr, llm.FaultEvery)
	}
	var b strings.Builder
	if err := rep.Markdown(&b); err != nil || strings.Count(b.String(), "\n| ") != 4 {
		t.Fatalf("markdown %v:\n%s", err, b.String())
	}
}
