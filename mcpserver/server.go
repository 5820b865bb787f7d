package mcpserver

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/tools"
)

// ContextTemplate is the URI template of a session's context resource.
const ContextTemplate = "agentmem://session/{id}/context"

// New returns an MCP server whose tools and resources run through ex.
// version is reported to clients as the server's version.
func New(ex *tools.Executor, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "agentmem", Title: "agentmem memory", Version: version}, &mcp.ServerOptions{
		Instructions: "Memory for this agent: the conversation (session_*, recall_conversation, search_conversation, " +
			"clear_recalled_context) and long-term memory scopes (memory_*; scope \"agent\" is your own).",
	})
	for _, t := range tools.All() {
		s.AddTool(&mcp.Tool{
			Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.ReadOnly, OpenWorldHint: new(false)},
		}, toolHandler(ex, t.Name))
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "session-context", Title: "Session context", MIMEType: "application/json", URITemplate: ContextTemplate,
		Description: "A session's context as it would be sent to an LLM now: layered messages, token usage.",
	}, contextResource(ex))
	return s
}

// toolHandler runs tool name through ex: the result as JSON text, or a tool
// error whose text is the *tools.Error as JSON.
func toolHandler(ex *tools.Executor, name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := ex.Execute(ctx, name, req.Params.Arguments)
		if err != nil {
			text := tools.AsError(err).JSON()
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(res)}}, StructuredContent: res}, nil
	}
}

// contextResource reads agentmem://session/{id}/context.
func contextResource(ex *tools.Executor) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, ok := strings.CutPrefix(uri, "agentmem://session/")
		id, ok2 := strings.CutSuffix(id, "/context")
		if !ok || !ok2 {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		args, _ := json.Marshal(map[string]string{"session_id": id})
		res, err := ex.Execute(ctx, tools.SessionContext, args)
		if err != nil {
			if e := tools.AsError(err); e.Code == 404 || e.Code == 400 {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(res)}}}, nil
	}
}
