package tools

import (
	"encoding/json"
	"fmt"
)

// Tool is one tool definition: the name the LLM calls, what it does, and the
// JSON Schema (draft 2020-12) of its arguments, always an object.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the arguments object.
	InputSchema json.RawMessage
	// ReadOnly: the tool changes nothing (MCP's readOnlyHint).
	ReadOnly bool
}

// Tool names.
const (
	SessionAppend        = "session_append"
	SessionContext       = "session_context"
	RecallConversation   = "recall_conversation"
	SearchConversation   = "search_conversation"
	ClearRecalledContext = "clear_recalled_context"
	MemoryRead           = "memory_read"
	MemoryWrite          = "memory_write"
	MemoryList           = "memory_list"
	MemorySearch         = "memory_search"
	MemoryHistory        = "memory_history"
	MemoryConsolidate    = "memory_consolidate"
)

// Patterns of the service's ids (README "Limits").
const (
	idPattern    = `^[A-Za-z0-9_-]{1,128}$`
	keyPattern   = `^[A-Za-z0-9_@-][A-Za-z0-9_.:/@-]{0,255}$`
	scopePattern = `^(agent|global|agent:[A-Za-z0-9_-]{1,128}|(workflow|swarm|debate|session|user|app|project|agent_type):[A-Za-z0-9_-]{1,128})$`
)

// obj is a JSON Schema object with properties, the required ones, and no
// other property allowed.
func obj(required []string, props map[string]any) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func pattern(desc, p string) map[string]any {
	return map[string]any{"type": "string", "description": desc, "pattern": p}
}

func enum(desc string, values ...string) map[string]any {
	return map[string]any{"type": "string", "description": desc, "enum": values}
}

// The service's bounds the schemas state (TestSchemaBoundsAreTheService's
// checks them against segmented and api).
const (
	// MaxQueryBytes is the longest query the service takes (413 beyond).
	MaxQueryBytes = 4 << 10
	// reservedOutputTokens and minBudget: a session's context budget is
	// max_context_tokens - reserved_output_tokens (default 4096) and must
	// be at least 256, so max_context_tokens is at least their sum.
	reservedOutputTokens = 4096
	minBudget            = 256
	MinContextTokens     = reservedOutputTokens + minBudget
)

var queryArg = map[string]any{"type": "string", "minLength": 1, "maxLength": MaxQueryBytes,
	"description": fmt.Sprintf("Words to look for (at most %d bytes as UTF-8).", MaxQueryBytes)}

func integer(desc string, min, max int) map[string]any {
	return map[string]any{"type": "integer", "description": desc, "minimum": min, "maximum": max}
}

func boolean(desc string) map[string]any {
	return map[string]any{"type": "boolean", "description": desc}
}

func stringList(desc string) map[string]any {
	return map[string]any{"type": "array", "description": desc, "items": map[string]any{"type": "string"}}
}

var (
	sessionID = pattern("The conversation (session) id: letters, digits, '_' or '-', at most 128.", idPattern)
	scope     = pattern("Whose memory: \"agent\" (your own private memory), \"global\", or a shared scope "+
		"\"user:<id>\", \"project:<id>\", \"app:<name>\", \"workflow:<id>\", \"swarm:<id>\", \"debate:<id>\", "+
		"\"session:<id>\", \"agent_type:<type>\" (shared by every agent of your type). The service decides what you may read or write.", scopePattern)
	key = pattern("The entry's key: 1-256 of letters, digits and _ . : / @ - (not starting with . / or :).", keyPattern)
)

var messageSchema = obj([]string{"role"}, map[string]any{
	"role":         enum("Who said it.", "user", "assistant", "system", "tool"),
	"content":      str("The text of the message."),
	"name":         str("Optional speaker name."),
	"tool_call_id": str("For a tool message: the id of the tool call it answers."),
	"tool_calls": map[string]any{
		"type":        "array",
		"description": "For an assistant message: the tool calls it made.",
		"items": obj([]string{"id", "name"}, map[string]any{
			"id":        str("The tool call id."),
			"name":      str("The tool's name."),
			"arguments": str("The arguments as JSON text."),
		}),
	},
})

// defs are the tools in the order they are listed.
var defs = []struct {
	name, desc string
	schema     map[string]any
}{
	{SessionAppend, "Append messages to a conversation (session), in order, as one step. The session is created on first use " +
		"unless create_if_missing is false. Returns the ids the service gave the messages, their token counts and the context budget used.",
		obj([]string{"session_id", "messages"}, map[string]any{
			"session_id": sessionID,
			"messages": map[string]any{
				"type": "array", "description": "The messages, oldest first (1 to 64).",
				"minItems": 1, "maxItems": 64, "items": messageSchema,
			},
			"create_if_missing": boolean("Create the session if it does not exist (default true)."),
			"system_prompt":     str("System prompt of a session created by this call (ignored otherwise)."),
			"max_context_tokens": integer(fmt.Sprintf("Context window in tokens of a session created by this call (omit it for the service default, 128000). "+
				"At least %d: %d tokens are reserved for the model's output and the rest, at least %d, is the context budget.",
				MinContextTokens, reservedOutputTokens, minBudget), MinContextTokens, 10_000_000),
		})},
	{SessionContext, "Read the context of a conversation as it would be sent to an LLM now: the layered messages " +
		"(format \"layers\", the default) or rendered for a chat API (\"openai\": a Chat Completions messages array; " +
		"\"anthropic\": a system string and a Messages API messages array).",
		obj([]string{"session_id"}, map[string]any{
			"session_id": sessionID,
			"format":     enum("How to render the context (default \"layers\").", "layers", "openai", "anthropic"),
		})},
	{RecallConversation, "Read earlier messages of a conversation verbatim, oldest first, by position: offset 0 is the first message " +
		"ever appended. Use it to see what was said before the context was summarized.",
		obj([]string{"session_id"}, map[string]any{
			"session_id": sessionID,
			"offset":     integer("How many messages to skip from the start (default 0).", 0, 1<<31-1),
			"limit":      integer("How many messages to return, 1-50 (default 20).", 1, 50),
		})},
	{SearchConversation, "Search a conversation's messages (or all conversations of its user) by words, best first (BM25). " +
		"With promote true, the hits from this conversation are copied into its context so the next turn sees them verbatim.",
		obj([]string{"session_id", "query"}, map[string]any{
			"session_id":           sessionID,
			"query":                queryArg,
			"limit":                integer("How many hits at most, 1-20 (default 10).", 1, 20),
			"across_user_sessions": boolean("Search every conversation of this session's user, not only this one (default false)."),
			"promote":              boolean("Copy this conversation's hits into its context (default false)."),
		})},
	{ClearRecalledContext, "Remove from a conversation's context the messages that were recalled or promoted into it " +
		"(the conversation itself is kept).",
		obj([]string{"session_id"}, map[string]any{"session_id": sessionID})},
	{MemoryConsolidate, "Extract the facts, preferences, decisions and corrections the user stated in a conversation " +
		"into long-term memory (the user's scope), now rather than when the conversation ends. Returns each fact and what became of it.",
		obj([]string{"session_id"}, map[string]any{
			"session_id": sessionID,
			"dry_run":    boolean("Only report the facts, write nothing (default false)."),
		})},
	{MemoryRead, "Read one entry of a memory scope by key: the current version, or the version given.",
		obj([]string{"scope", "key"}, map[string]any{
			"scope":   scope,
			"key":     key,
			"version": integer("A past version to read (default 0: the current one).", 0, 1<<53),
		})},
	{MemoryWrite, "Write an entry (a new version of a key) in a memory scope. The value is text.",
		obj([]string{"scope", "key", "value"}, map[string]any{
			"scope":            scope,
			"key":              key,
			"value":            map[string]any{"type": "string", "description": "The value (at most 1 MiB).", "maxLength": 1 << 20},
			"content_type":     str("Optional media type of the value, e.g. \"text/plain\" or \"application/json\"."),
			"memory_type":      enum("What kind of memory it is (optional).", "semantic", "episodic", "procedural"),
			"expected_version": integer("Write only if the current version is this one (0: only if the key does not exist; default: any).", 0, 1<<53),
			"ttl_seconds":      integer("Expire the entry after this many seconds (default: never; episodic entries take the scope's episodic TTL, 90 days unless configured).", 0, 1<<31-1),
			"importance":       map[string]any{"type": "number", "description": "How important it is, 0-1 (less important entries are evicted first).", "minimum": 0, "maximum": 1},
			"tags":             stringList("Optional tags."),
		})},
	{MemoryList, "List the current entries of a memory scope, sorted by key, one page at a time.",
		obj([]string{"scope"}, map[string]any{
			"scope":           scope,
			"prefix":          str("Only keys starting with this."),
			"limit":           integer("Entries per page, 1-1000 (default 100).", 1, 1000),
			"page_token":      str("next_page_token of the previous page."),
			"include_deleted": boolean("Also list deleted keys (their tombstone version)."),
			"tags":            stringList("Only entries carrying every one of these tags."),
		})},
	{MemorySearch, "Search the entries of a memory scope by words, best first (BM25 over keys, values and tags).",
		obj([]string{"scope", "query"}, map[string]any{
			"scope": scope,
			"query": queryArg,
			"limit": integer("How many hits at most, 1-20 (default 10).", 1, 20),
			"tags":  stringList("Only entries carrying every one of these tags."),
		})},
	{MemoryHistory, "Every kept version of one key of a memory scope, oldest first, deletions included.",
		obj([]string{"scope", "key"}, map[string]any{"scope": scope, "key": key})},
}

// readOnly are the tools that change nothing.
var readOnly = map[string]bool{
	SessionContext: true, RecallConversation: true, MemoryRead: true,
	MemoryList: true, MemorySearch: true, MemoryHistory: true,
}

// all is defs as Tools, built once.
var all = func() []Tool {
	out := make([]Tool, len(defs))
	for i, d := range defs {
		b, err := json.Marshal(d.schema)
		if err != nil {
			panic(fmt.Sprintf("tools: schema of %s: %v", d.name, err)) // static data: caught by the tests
		}
		out[i] = Tool{Name: d.name, Description: d.desc, InputSchema: b, ReadOnly: readOnly[d.name]}
	}
	return out
}()

// All returns every tool definition (a fresh slice; the schemas are shared
// and must not be modified).
func All() []Tool { return append([]Tool(nil), all...) }

// Lookup returns the tool named name.
func Lookup(name string) (Tool, bool) {
	for _, t := range all {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
