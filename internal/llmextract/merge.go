package llmextract

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
)

// Merger merges two values of one fact with Chat (a scope's conflict
// strategy "llm"). Its answer must hold words of one of the two values, so
// an endpoint that invents a third value is refused (ErrAnswer) and the
// caller keeps last write wins.
type Merger struct {
	Chat Chat
}

// MergeInstruction is the system prompt of a merge.
const MergeInstruction = `Two values were recorded for the same fact about a user, the current one first, then a newer statement.
Decide what the fact holds now. Usually the newer statement replaces the current value; keep the current value if the newer one is not about the same thing;
combine them only when both hold at once (e.g. two allergies). Answer with JSON only: {"value":"..."}`

// MergeFact implements consolidation.Merger.
func (m Merger) MergeFact(ctx context.Context, key, current, proposed string) (string, error) {
	out, err := m.Chat.Chat(ctx, MergeInstruction, fmt.Sprintf("fact: %s\ncurrent: %s\nnewer: %s\n", key, current, proposed), 200)
	if err != nil {
		return "", err
	}
	out = strings.TrimSpace(out)
	out = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(out, "```json"), "```"), "```")
	var a struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &a); err != nil {
		return "", fmt.Errorf("%w: %v", ErrAnswer, err)
	}
	v := strings.TrimSpace(a.Value)
	if v == "" || len(v) > 300 {
		return "", fmt.Errorf("%w: empty or too long value", ErrAnswer)
	}
	words, known := facts.ContentWords(v), facts.ContentWords(current+" "+proposed)
	for w := range words {
		if known[w] {
			return v, nil
		}
	}
	return "", fmt.Errorf("%w: %q holds no word of either value", ErrAnswer, v)
}
