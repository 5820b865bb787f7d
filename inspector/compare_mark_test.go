package inspector

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestErasedMark: the comparison knows an item erased since by the start
// of the text a past context shows for it; the two must not drift apart.
func TestErasedMark(t *testing.T) {
	for _, text := range []string{
		segmented.ErasedText(&memoryv1.MemoryItem{Scope: "user:u1", Version: 1}, "k"),
		segmented.ErasedRecalledText(&memoryv1.RecalledItem{MessageId: "m1", SessionId: "s0"}),
	} {
		if !strings.HasPrefix(text, erasedMark) {
			t.Errorf("%q does not start with %q", text, erasedMark)
		}
	}
}
