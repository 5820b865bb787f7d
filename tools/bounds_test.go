package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api/limits"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/tools"
)

// TestSchemaBoundsAreTheService: the schemas state the service's own
// bounds, so a value the schema allows is not refused for its size: the
// query cap and the smallest max_context_tokens the session takes with the
// default reserved output.
func TestSchemaBoundsAreTheService(t *testing.T) {
	if tools.MaxQueryBytes != limits.MaxQueryBytes {
		t.Errorf("tools.MaxQueryBytes %d, limits.MaxQueryBytes %d", tools.MaxQueryBytes, limits.MaxQueryBytes)
	}
	if want := segmented.DefaultReservedOutputTokens + segmented.MinBudget; tools.MinContextTokens != want {
		t.Errorf("tools.MinContextTokens %d, the service's %d", tools.MinContextTokens, want)
	}
	for _, tl := range tools.All() {
		var s struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		if q, ok := s.Properties["query"]; ok && q["maxLength"] != float64(limits.MaxQueryBytes) {
			t.Errorf("%s: query maxLength %v, want %d", tl.Name, q["maxLength"], limits.MaxQueryBytes)
		}
		if m, ok := s.Properties["max_context_tokens"]; ok {
			if m["minimum"] != float64(tools.MinContextTokens) || !strings.Contains(m["description"].(string), "4352") {
				t.Errorf("%s: max_context_tokens %v", tl.Name, m)
			}
		}
	}
}
