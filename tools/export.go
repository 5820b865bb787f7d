package tools

import (
	"encoding/json"
	"fmt"
	"io"
)

// OpenAIFunction is a tool in OpenAI's function-calling shape (Chat
// Completions "tools" array).
type OpenAIFunction struct {
	Type     string         `json:"type"` // "function"
	Function OpenAIFuncSpec `json:"function"`
}

// OpenAIFuncSpec is the function inside an OpenAIFunction.
type OpenAIFuncSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// AnthropicTool is a tool in Anthropic's tool-use shape (Messages API
// "tools" array).
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// OpenAI returns every tool as an OpenAI function-calling tool.
func OpenAI() []OpenAIFunction {
	out := make([]OpenAIFunction, len(all))
	for i, t := range all {
		out[i] = OpenAIFunction{Type: "function", Function: OpenAIFuncSpec{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}}
	}
	return out
}

// Anthropic returns every tool as an Anthropic tool-use tool.
func Anthropic() []AnthropicTool {
	out := make([]AnthropicTool, len(all))
	for i, t := range all {
		out[i] = AnthropicTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out
}

// MCPTool is a tool as MCP's tools/list describes it.
type MCPTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// WriteJSON writes every tool as a JSON array in format "openai",
// "anthropic" or "mcp".
func WriteJSON(w io.Writer, format string) error {
	var v any
	switch format {
	case "openai":
		v = OpenAI()
	case "anthropic":
		v = Anthropic()
	case "mcp":
		out := make([]MCPTool, len(all))
		for i, t := range all {
			out[i] = MCPTool{t.Name, t.Description, t.InputSchema}
		}
		v = out
	default:
		return fmt.Errorf("tools: format %q: want openai, anthropic or mcp", format)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
