package api

import "testing"

// TestOperationsDeclaredWhole: every operation is declared once, with its
// messages, texts and handler.
func TestOperationsDeclaredWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range operations {
		if seen[op.name] {
			t.Errorf("operation %s declared twice", op.name)
		}
		seen[op.name] = true
		if op.summary == "" || op.desc == "" || op.access.text == "" || op.request == nil || op.reply == nil || op.serve == nil {
			t.Errorf("operation %s is not declared whole: %+v", op.name, op)
		}
	}
}
