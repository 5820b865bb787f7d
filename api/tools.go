package api

import (
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
	reply, ok := tools.Reply(format)
	if !ok {
		c.fail(&Error{Code: 400, Field: "format", Message: `"` + format + `": use "openai", "anthropic" or "mcp"`})
		return
	}
	respond(c.rp, c.asJSON, reply)
}
