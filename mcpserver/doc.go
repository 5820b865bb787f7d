// Package mcpserver serves the memory tools of package tools over the Model
// Context Protocol (the official Go SDK, github.com/modelcontextprotocol/go-sdk),
// on stdio or Streamable HTTP, as one agent.
//
// One server process holds one NATS connection, and that connection's
// verified identity is the caller of every tool call: with tenants
// (examples/auth) the NATS user is the agent, so one MCP server is one
// agent, whatever its MCP clients say. Config.Agent only names which agent's
// private memory the scope "agent" means; the node still checks every call
// for the connection's identity, and the connection's account reaches only
// its own agent's subjects.
//
// Tools: every tools.All() tool, each a thin call through the Go client;
// results are JSON text (also given as structuredContent); failures are tool
// errors (isError) whose text is {"error":{"code","field","message"}}.
// Resources: the template agentmem://session/{id}/context, a session's
// context as the session_context tool gives it (JSON).
//
// Every surface answers bad input and stays up: stdio uses
// NewLineTransport, which answers a malformed line with a JSON-RPC error
// instead of ending the session; HTTP checks Host and Origin on every
// request and bounds the open sessions (HTTPOptions).
package mcpserver
