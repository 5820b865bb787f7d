package node

import (
	"github.com/agentmem/agentmem/consolidation"
	"github.com/agentmem/agentmem/internal/llmextract"
	"github.com/agentmem/agentmem/internal/llmsummary"
)

// llmExtractor extracts facts with the --llm-* endpoint (nil when its
// settings are invalid: the deterministic extractor then serves).
func llmExtractor(cfg llmsummary.Config) consolidation.Extractor {
	c, err := llmsummary.New(cfg)
	if err != nil {
		return nil
	}
	return llmextract.Extractor{Chat: c}
}

// llmMerger merges conflicting fact values with the --llm-* endpoint in
// scopes whose conflict strategy is "llm" (nil when its settings are
// invalid: last write wins there).
func llmMerger(cfg llmsummary.Config) consolidation.Merger {
	c, err := llmsummary.New(cfg)
	if err != nil {
		return nil
	}
	return llmextract.Merger{Chat: c}
}
