package tools_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentmem/agentmem/tools"
)

// The tools as an OpenAI Chat Completions "tools" array.
func ExampleOpenAI() {
	for _, f := range tools.OpenAI() {
		fmt.Println(f.Type, f.Function.Name)
	}
	b, _ := json.Marshal(tools.OpenAI()[0])
	fmt.Println(string(b)[:60])
	// Output:
	// function session_append
	// function session_context
	// function recall_conversation
	// function search_conversation
	// function clear_recalled_context
	// function memory_consolidate
	// function memory_read
	// function memory_write
	// function memory_list
	// function memory_search
	// function memory_history
	// {"type":"function","function":{"name":"session_append","desc
}
