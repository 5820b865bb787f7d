// Package jsonbody reads the JSON bodies of API requests into protojson,
// leniently where LLM APIs differ from the proto shape and strictly
// elsewhere, and writes the chat APIs' shapes into JSON replies.
//
// Read parses a body beside the request's message descriptor: it accepts
// the spellings a chat API uses (enum values by their short lowercase
// name, "user" for ROLE_USER; OpenAI tool calls {id, type: "function",
// function: {name, arguments}}; content as an array of text parts; an
// OpenAI reply message's refusal, audio and annotations), checks every
// value's type and range, and refuses unknown members, so that every error
// names the field path as sent (messages[0].role). It returns protojson
// text: protojson stays the one definition of what a body means.
//
// ChatShape rewrites a JSON ContextReply so its rendered messages are
// exactly what the OpenAI Chat Completions and Anthropic Messages APIs
// take.
package jsonbody
