package tools_test

import (
	"testing"

	"github.com/agentmem/agentmem/tools"
)

// TestReply: every format answers every tool, built once; another format
// is none.
func TestReply(t *testing.T) {
	for _, f := range tools.Formats {
		r, ok := tools.Reply(f)
		if !ok || r.GetFormat() != f || len(r.GetTools()) != len(tools.OpenAI()) {
			t.Errorf("%s: %v, %d tools", f, ok, len(r.GetTools()))
		}
		if again, _ := tools.Reply(f); again != r {
			t.Errorf("%s: built twice", f)
		}
	}
	if _, ok := tools.Reply("xml"); ok {
		t.Error("xml answered")
	}
}
