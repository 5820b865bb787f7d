package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"google.golang.org/protobuf/types/known/structpb"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tools"
)

// toolsList serves mem.v1.tools.list: the tool definitions of package
// tools, so an agent loop in any language needs only "get tools, pass them
// to the LLM, forward calls" (to agentmem-mcp or its own client). They
// hold no data: any caller may read them.
func (s *Service) toolsList(c *call) {
	req := &memoryv1.ToolsRequest{}
	if !s.readBody(c, req) {
		return
	}
	format := req.GetFormat()
	if format == "" {
		format = "openai"
	}
	reply, ok := toolReplies()[format]
	if !ok {
		c.fail(&Error{Code: 400, Field: "format", Message: `"` + format + `": use "openai", "anthropic" or "mcp"`})
		return
	}
	respond(c.rp, c.asJSON, reply)
}

// toolReplies are the replies of every format, built once: the
// definitions are static (a build that cannot encode them fails every
// test of the endpoint).
var toolReplies = sync.OnceValue(func() map[string]*memoryv1.ToolsReply {
	out := map[string]*memoryv1.ToolsReply{}
	for _, f := range []string{"openai", "anthropic", "mcp"} {
		r, err := toolsReply(f)
		if err != nil {
			panic(fmt.Sprintf("api: tool definitions as %s: %v", f, err))
		}
		out[f] = r
	}
	return out
})

func toolsReply(format string) (*memoryv1.ToolsReply, error) {
	var buf bytes.Buffer
	if err := tools.WriteJSON(&buf, format); err != nil {
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
