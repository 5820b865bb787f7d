package inspector

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestSourceOfRecalledSummary: a recalled archived summary names the
// summary, a recalled message its message.
func TestSourceOfRecalledSummary(t *testing.T) {
	snap := &memoryv1.SessionSnapshot{Assembled: &memoryv1.Assembled{Recalled: []*memoryv1.RecalledItem{
		{SummaryId: "s1", Seq: 9, Text: "Archived summary of messages 1 to 9: …"},
		{MessageId: "m3", Seq: 3, Text: "Recalled m3"},
	}}}
	src := newSources(snap)
	got, _ := src.of(&memoryv1.ContextMessage{Layer: segmented.LayerRecalled, Id: "recalled:summary:s1"})
	if !strings.Contains(got, "archived summary s1") || !strings.Contains(got, "seq 9") {
		t.Fatalf("summary source = %q", got)
	}
	if got, _ := src.of(&memoryv1.ContextMessage{Layer: segmented.LayerRecalled, Id: "recalled:m3"}); !strings.Contains(got, "message m3") {
		t.Fatalf("message source = %q", got)
	}
}
