package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestJSONErrorsNameTheField sends malformed JSON bodies (syntax, type,
// enum, unknown field, shape errors) and checks that each 400 names the
// field path as the client sent it, in the error header and in the
// ErrorDetail body.
func TestJSONErrorsNameTheField(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "good", &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	const app, create, ctxt = "mem.v1.session.good.append", "mem.v1.session.new.create", "mem.v1.session.good.context"
	cases := []struct {
		name, subject, body, field, says string
	}{
		{"truncated", app, `{"messages":[`, "messages", "invalid JSON"},
		{"truncated inside a message", app, `{"messages":[{"role":"user","content":"hi"`, "messages[0]", "invalid JSON"},
		{"bad token", app, `{"messages":[{"role":"user","content":hi}]}`, "messages[0].content", "invalid JSON"},
		{"not an object", app, `[1,2]`, "body", "expected an object"},
		{"two values", app, `{} {}`, "body", "more than one value"},
		{"unknown field", app, `{"mesages":[]}`, "mesages", "unknown field"},
		{"unknown nested field", app, `{"messages":[{"role":"user","contnt":"x"}]}`, "messages[0].contnt", "unknown field"},
		{"duplicate field", app, `{"messages":[{"role":"user","role":"user"}]}`, "messages[0].role", "twice"},
		{"messages not a list", app, `{"messages":{"role":"user"}}`, "messages", "expected an array"},
		{"message not an object", app, `{"messages":["hi"]}`, "messages[0]", "expected an object"},
		{"null in a list", app, `{"messages":[null]}`, "messages[0]", "null"},
		{"content is a number", app, `{"messages":[{"role":"user","content":42}]}`, "messages[0].content", "expected a string"},
		{"unknown role", app, `{"messages":[{"role":"usr","content":"x"}]}`, "messages[0].role", `"user"`},
		{"role is a bool", app, `{"messages":[{"role":true,"content":"x"}]}`, "messages[0].role", "expected one of"},
		{"camelCase path as sent", app, `{"messages":[{"role":"tool","toolCallId":7}]}`, "messages[0].toolCallId", "expected a string"},
		{"said time not an integer", app, `{"messages":[{"role":"user","content":"x","said_unix_nano":"soon"}]}`, "messages[0].said_unix_nano", "expected an integer"},
		{"said time a fraction", app, `{"messages":[{"role":"user","content":"x","said_unix_nano":1.5}]}`, "messages[0].said_unix_nano", "expected an integer"},
		{"tool call type", app, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"code","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].type", `"function"`},
		{"tool call function not an object", app, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":"f"}]}]}`, "messages[0].tool_calls[0].function", "expected an object"},
		{"tool call function name a number", app, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":1,"arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].name", "expected a string"},
		{"tool call arguments a number", app, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":3}}]}]}`, "messages[0].tool_calls[0].function.arguments", "arguments"},
		{"tool call unknown function field", app, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","args":"{}"}}]}]}`, "messages[0].tool_calls[0].function.args", "unknown field"},
		{"image content part", app, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages[0].content[0].type", `"text"`},
		{"uint32 out of range", create, `{"max_context_tokens":5000000000}`, "max_context_tokens", "out of range"},
		{"huge exponent", app, `{"messages":[{"role":"user","content":"x","said_unix_nano":1e999999999}]}`, "messages[0].said_unix_nano", "expected an integer"},
		{"int64 out of range", app, `{"messages":[{"role":"user","content":"x","said_unix_nano":1e30}]}`, "messages[0].said_unix_nano", "out of range"},
		{"uint32 negative", create, `{"max_context_tokens":-1}`, "max_context_tokens", "out of range"},
		{"uint32 as a word", create, `{"maxContextTokens":"many"}`, "maxContextTokens", "expected an integer"},
		{"string given an object", create, `{"user_id":{"id":"u"}}`, "user_id", "expected a string"},
		{"map value not a string", "mem.v1.agent.a1.put", `{"key":"k","metadata":{"k":1}}`, `metadata["k"]`, "expected a string"},
		{"bool given a string", "mem.v1.agent.a1.list", `{"include_deleted":"yes"}`, "include_deleted", "expected true or false"},
		{"bytes not base64", "mem.v1.data.put", `{"data":"not base64!"}`, "data", "base64"},
		{"two members of a oneof", "mem.v1.session.good.kernel", `{"set_fact":{"key":"k","value":"v"},"remove_tool":"t"}`, "remove_tool", "only one of"},
		{"unknown format", ctxt, `{"format":"gemini"}`, "format", `"openai"`},
		{"small max_context_tokens meets the default reserve", create, `{"user_id":"u","max_context_tokens":2000}`, "reserved_output_tokens", "default 4096, not below max_context_tokens (2000)"},
		{"model error keeps its field", app, `{"messages":[{"role":"tool","tool_call_id":"nope","content":"x"}]}`, "messages[0].tool_call_id", "no open tool call"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, desc, body := rawRequest(t, nc, tc.subject, []byte(tc.body), true)
			if code != "400" {
				t.Fatalf("code = %q (%s), want 400", code, desc)
			}
			if !strings.HasPrefix(desc, tc.field+": ") || !strings.Contains(desc, tc.says) {
				t.Fatalf("error %q does not name %q or lacks %q", desc, tc.field, tc.says)
			}
			detail := &memoryv1.ErrorDetail{}
			if err := protojson.Unmarshal(body, detail); err != nil || detail.GetField() != tc.field || detail.GetCode() != 400 {
				t.Fatalf("error body %s (%v): want field %q code 400", body, err, tc.field)
			}
		})
	}
}

// TestJSONNative: a JSON-only client appends in the OpenAI message shape
// (lowercase roles, tool_calls with type/function, content parts, null
// content), through a real node; replies carry zero values and the proto
// field names and still decode with protojson; a retry of the same append
// in the other spelling is the same command (a duplicate with the original
// ids); the context holds what was sent.
func TestJSONNative(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	code, desc, body := rawRequest(t, nc, "mem.v1.session.j2.create", []byte(`{"user_id":"u1","system_prompt":"Be brief."}`), true)
	if code != "" {
		t.Fatalf("create: %s %s", code, desc)
	}
	created := map[string]any{}
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	if r := created["result"].(map[string]any); r["duplicate"] != false {
		t.Fatalf("create reply lacks duplicate:false: %s", body)
	}
	openai := `{"command_id":"turn-1","messages":[
		{"role":"user","content":"what is the weather in Paris?"},
		{"role":"assistant","content":null,"refusal":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"18C"},{"type":"text","text":"sunny"}]},
		{"role":"Assistant","content":"18C and sunny."}]}`
	code, desc, body = rawRequest(t, nc, "mem.v1.session.j2.append", []byte(openai), true)
	if code != "" {
		t.Fatalf("append: %s %s", code, desc)
	}
	first := &memoryv1.AppendReply{}
	if err := protojson.Unmarshal(body, first); err != nil {
		t.Fatalf("append reply %s is not protojson: %v", body, err)
	}
	if len(first.GetMessageIds()) != 4 || first.GetResult().GetDuplicate() {
		t.Fatalf("append reply %v", first)
	}
	for _, want := range []string{`"duplicate":false`, `"compressions":0`, `"message_ids":[`, `"tokens":[`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("append reply %s lacks %s", body, want)
		}
	}
	// The same append in protojson's own spelling is the same request.
	canonical := `{"command_id":"turn-1","messages":[
		{"role":"ROLE_USER","content":"what is the weather in Paris?"},
		{"role":"ROLE_ASSISTANT","toolCalls":[{"id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]},
		{"role":"ROLE_TOOL","toolCallId":"call_1","content":"18C\nsunny"},
		{"role":3,"content":"18C and sunny."}]}`
	code, desc, body = rawRequest(t, nc, "mem.v1.session.j2.append", []byte(canonical), true)
	if code != "" {
		t.Fatalf("retry: %s %s", code, desc)
	}
	again := &memoryv1.AppendReply{}
	if err := protojson.Unmarshal(body, again); err != nil {
		t.Fatal(err)
	}
	if !again.GetResult().GetDuplicate() || strings.Join(again.GetMessageIds(), ",") != strings.Join(first.GetMessageIds(), ",") {
		t.Fatalf("retry in the canonical spelling = %v, want a duplicate of %v", again, first)
	}
	// Empty lists and zero numbers are there, not left out.
	_, _, body = rawRequest(t, nc, "mem.v1.session.j2.kernel", nil, true)
	if !strings.Contains(string(body), `"facts":[]`) {
		t.Fatalf("kernel reply leaves out its empty lists: %s", body)
	}
	code, desc, body = rawRequest(t, nc, "mem.v1.session.j2.context", []byte(`{"format":"openai"}`), true)
	if code != "" {
		t.Fatalf("context: %s %s", code, desc)
	}
	cr := &memoryv1.ContextReply{}
	if err := protojson.Unmarshal(body, cr); err != nil {
		t.Fatalf("context reply is not protojson: %v", err)
	}
	var calls, tools int
	for _, m := range cr.GetRendered().GetOpenai() {
		calls += len(m.GetToolCalls())
		if m.GetRole() == "tool" && m.GetContent() == "18C\nsunny" {
			tools++
		}
	}
	if calls != 1 || tools != 1 {
		t.Fatalf("OpenAI context %s: %d tool calls, %d tool results, want 1 and 1", body, calls, tools)
	}
	if !strings.Contains(string(body), `"arguments":"{\"city\":\"Paris\"}"`) {
		t.Fatalf("context lost the tool call's arguments: %s", body)
	}
}
