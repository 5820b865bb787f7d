package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"google.golang.org/protobuf/types/known/structpb"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Formats are the formats WriteJSON and Reply write the tools in.
var Formats = []string{"openai", "anthropic", "mcp"}

// Reply is the tools in format (one of Formats) as mem.v1.tools.list
// answers them; ok is false for another format. The replies are built
// once: the definitions are static (a build that cannot encode them fails
// every test of the endpoint).
func Reply(format string) (reply *memoryv1.ToolsReply, ok bool) {
	reply, ok = replies()[format]
	return reply, ok
}

var replies = sync.OnceValue(func() map[string]*memoryv1.ToolsReply {
	out := map[string]*memoryv1.ToolsReply{}
	for _, f := range Formats {
		r, err := reply(f)
		if err != nil {
			panic(fmt.Sprintf("tools: definitions as %s: %v", f, err))
		}
		out[f] = r
	}
	return out
})

func reply(format string) (*memoryv1.ToolsReply, error) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, format); err != nil {
		return nil, err
	}
	var list []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &list); err != nil {
		return nil, err
	}
	out := &memoryv1.ToolsReply{Format: format}
	for _, t := range list {
		st, err := structpb.NewStruct(t)
		if err != nil {
			return nil, err
		}
		out.Tools = append(out.Tools, st)
	}
	return out, nil
}
