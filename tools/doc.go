// Package tools is the one source of truth for the memory tools an LLM calls:
// their names, descriptions and JSON Schema (draft 2020-12)
// input schemas, the same definitions exported for OpenAI function calling
// (OpenAI) and Anthropic tool use (Anthropic), and an Executor that runs a
// tool call through the Go client.
//
// An agent loop in any language needs three steps: get the tools (OpenAI,
// Anthropic, or `agentmem-mcp --print-tools openai|anthropic`), pass them to
// the LLM, forward each call the LLM makes to Executor.Execute (or to the MCP
// server, cmd/mcp, which serves the same tools).
//
// Identity is never a tool argument: the Executor acts as its client's NATS
// connection, and the node checks every call for that connection's verified
// identity. The only identity-like setting, Executor.Agent, names the agent
// whose private memory the scope "agent" means; it is configuration of the
// process (one MCP server = one agent), not something the LLM can choose,
// and with tenants the NATS account only reaches its own agent's subjects.
//
// Results are JSON text for the LLM to read: snake_case names, roles and
// memory types in lowercase, entry values as text (base64 with
// value_encoding "base64" when they are not UTF-8), numbers as numbers.
// Failures are *Error values naming the argument (or the service's field)
// and the reason, with the service's HTTP-like code.
package tools
