package node

import (
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/llmextract"
	"github.com/agentmem/agentmem/internal/llmsummary"
)

// llmExtractor extracts facts with the --llm-* endpoint (nil when its
// settings are invalid: the deterministic extractor then serves).
func llmExtractor(cfg llmsummary.Config) api.FactExtractor {
	c, err := llmsummary.New(cfg)
	if err != nil {
		return nil
	}
	return llmextract.Extractor{Chat: c}
}
