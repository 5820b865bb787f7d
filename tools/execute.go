package tools

import (
	"context"
	"encoding/json"

	"github.com/agentmem/agentmem/client"
)

// Executor runs tool calls through a Go client: each call is one or two
// requests of the memory service, made as the client's NATS connection.
type Executor struct {
	// Client is the connection the calls are made on: its NATS identity is
	// the caller the node checks.
	Client *client.Client
	// Agent is the agent id whose private memory the scope "agent" means,
	// and the agent of sessions session_append creates. Empty: the scope
	// "agent" is refused and sessions are created without an agent (a
	// single-user node allows that; a node with tenants does not).
	Agent string
}

// handler runs one tool with its raw arguments and returns the result value.
type handler func(e *Executor, ctx context.Context, args json.RawMessage) (any, error)

var handlers = map[string]handler{
	SessionAppend:        (*Executor).sessionAppend,
	SessionContext:       (*Executor).sessionContext,
	RecallConversation:   (*Executor).recall,
	SearchConversation:   (*Executor).search,
	ClearRecalledContext: (*Executor).clearRecalled,
	MemoryConsolidate:    (*Executor).consolidate,
	MemoryRead:           (*Executor).memoryRead,
	MemoryWrite:          (*Executor).memoryWrite,
	MemoryList:           (*Executor).memoryList,
	MemorySearch:         (*Executor).memorySearch,
	MemoryHistory:        (*Executor).memoryHistory,
}

// Execute runs tool name with args (the JSON object the LLM produced; empty
// is {}) and returns the result as JSON text. A failure is an *Error (see
// AsError) whose JSON method gives the text to hand back to the LLM: an
// unknown tool is 404 "name", a bad argument 400 naming it, a refusal the
// service's code and field. A timeout (504) does not say a write failed:
// calling again with the same arguments may apply it twice for
// session_append and memory_write (each call is a new command).
func (e *Executor) Execute(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	h, ok := handlers[name]
	if !ok {
		return nil, &Error{Code: 404, Field: "name", Message: "no tool named " + name}
	}
	v, err := h(e, ctx, args)
	if err != nil {
		return nil, AsError(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Code: 500, Message: err.Error()}
	}
	return b, nil
}
