package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func user(text string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text}
}

// rawRequest sends data to subject, optionally as JSON, and returns the
// error code header (0 if none), the error description and the body.
func rawRequest(t *testing.T, nc *nats.Conn, subject string, data []byte, asJSON bool) (string, string, []byte) {
	t.Helper()
	msg := nats.NewMsg(subject)
	msg.Data = data
	if asJSON {
		msg.Header.Set("Content-Type", "application/json")
	}
	rep, err := nc.RequestMsg(msg, 5*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	return rep.Header.Get("Nats-Service-Error-Code"), rep.Header.Get("Nats-Service-Error"), rep.Data
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBadInput sends each kind of bad request and checks the code and that the
// message names the field; afterwards the node still serves and the stored
// session is unchanged.
func TestBadInput(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "good", &memoryv1.CreateSessionRequest{UserId: "u", SystemPrompt: "sys"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "good", user("hello")); err != nil {
		t.Fatal(err)
	}
	before, err := c.Context(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, "archived", nil); err != nil {
		t.Fatal(err)
	}
	for _, a := range []memoryv1.StatusAction{memoryv1.StatusAction_STATUS_ACTION_TERMINATE, memoryv1.StatusAction_STATUS_ACTION_ARCHIVE} {
		if _, err := c.SetStatus(ctx, "archived", a, "test"); err != nil {
			t.Fatal(err)
		}
	}
	appendBody := func(msgs ...*memoryv1.MessageInput) []byte {
		return marshal(t, &memoryv1.AppendRequest{Messages: msgs})
	}
	many := make([]*memoryv1.MessageInput, 65)
	for i := range many {
		many[i] = user("x")
	}
	cases := []struct {
		name    string
		subject string
		data    []byte
		json    bool
		code    string
		field   string
	}{
		{"unknown session", "mem.v1.session.nope.append", appendBody(user("hi")), false, "404", "session_id"},
		{"unknown session context", "mem.v1.session.nope.context", nil, false, "404", "session_id"},
		{"id with dots", "mem.v1.session.a.b.append", appendBody(user("hi")), false, "400", "session_id"},
		{"id too long", "mem.v1.session." + strings.Repeat("a", 200) + ".append", appendBody(user("hi")), false, "400", "session_id"},
		{"id with bad chars", "mem.v1.session.a$b.append", appendBody(user("hi")), false, "400", "session_id"},
		{"invalid role", "mem.v1.session.good.append", appendBody(&memoryv1.MessageInput{Role: 42, Content: "x"}), false, "400", "messages[0].role"},
		{"missing role", "mem.v1.session.good.append", appendBody(&memoryv1.MessageInput{Content: "x"}), false, "400", "messages[0].role"},
		{"tool result without call", "mem.v1.session.good.append", appendBody(&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call_9", Content: "42"}), false, "400", "messages[0].tool_call_id"},
		{"no messages", "mem.v1.session.good.append", appendBody(), false, "400", "messages"},
		{"too many messages", "mem.v1.session.good.append", appendBody(many...), false, "413", "messages"},
		{"oversized message", "mem.v1.session.good.append", appendBody(user(strings.Repeat("y", 300<<10))), false, "413", "messages[0].content"},
		{"bad message id", "mem.v1.session.good.append", appendBody(&memoryv1.MessageInput{Id: "a.b", Role: memoryv1.Role_ROLE_USER, Content: "x"}), false, "400", "messages[0].id"},
		{"malformed protobuf", "mem.v1.session.good.append", []byte{0xff, 0xff, 0xff, 0x01}, false, "400", "body"},
		// JSON errors name the field path as sent (TestJSONErrorsNameTheField has more).
		{"malformed json", "mem.v1.session.good.append", []byte(`{"messages":[`), true, "400", "messages"},
		{"unknown json field", "mem.v1.session.good.append", []byte(`{"mesages":[]}`), true, "400", "mesages"},
		{"append to archived", "mem.v1.session.archived.append", appendBody(user("hi")), false, "409", "status"},
		{"create twice", "mem.v1.session.good.create", marshal(t, &memoryv1.CreateSessionRequest{}), false, "409", "session_id"},
		{"bad profile", "mem.v1.session.new1.create", marshal(t, &memoryv1.CreateSessionRequest{Profile: "fast"}), false, "400", "profile"},
		{"reserved above max", "mem.v1.session.new2.create", marshal(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 1000, ReservedOutputTokens: 1000}), false, "400", "reserved_output_tokens"},
		{"bad state key", "mem.v1.session.good.state", marshal(t, &memoryv1.StateRequest{Op: memoryv1.StateOp_STATE_OP_SET, Key: "user:x"}), false, "400", "key"},
		{"resume an active session", "mem.v1.session.good.status", marshal(t, &memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_RESUME}), false, "409", "action"},
		{"bad command id", "mem.v1.session.good.append", marshal(t, &memoryv1.AppendRequest{CommandId: "a b", Messages: []*memoryv1.MessageInput{user("x")}}), false, "400", "command_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, desc, body := rawRequest(t, nc, tc.subject, tc.data, tc.json)
			if code != tc.code {
				t.Fatalf("code = %q (%s), want %s", code, desc, tc.code)
			}
			if !strings.HasPrefix(desc, tc.field+":") {
				t.Fatalf("description %q does not start with the field %q", desc, tc.field)
			}
			detail := &memoryv1.ErrorDetail{}
			if tc.json {
				if !strings.Contains(string(body), `"field"`) {
					t.Fatalf("JSON error body %s has no field", body)
				}
				return
			}
			if err := proto.Unmarshal(body, detail); err != nil || detail.GetField() != tc.field {
				t.Fatalf("error body %v (%v), want field %q", detail, err, tc.field)
			}
		})
	}
	after, err := c.Context(ctx, "good")
	if err != nil {
		t.Fatalf("node stopped serving: %v", err)
	}
	if !proto.Equal(before, after) {
		t.Fatalf("bad input changed the stored session:\nbefore %v\nafter  %v", before, after)
	}
	for _, id := range []string{"new1", "new2"} {
		if _, err := c.Get(ctx, id); client.Code(err) != 404 {
			t.Fatalf("rejected create left session %s behind: %v", id, err)
		}
	}
}

// TestJSONRoundTrip talks to the service in protojson only.
func TestJSONRoundTrip(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	code, desc, _ := rawRequest(t, nc, "mem.v1.session.j1.create", []byte(`{"user_id":"u1","system_prompt":"Be brief."}`), true)
	if code != "" {
		t.Fatalf("create: %s %s", code, desc)
	}
	code, desc, body := rawRequest(t, nc, "mem.v1.session.j1.append", []byte(`{"messages":[{"role":"ROLE_USER","content":"hello there"}]}`), true)
	if code != "" {
		t.Fatalf("append: %s %s", code, desc)
	}
	if !strings.Contains(string(body), `"message_ids"`) {
		t.Fatalf("append reply is not protojson: %s", body)
	}
	_, _, body = rawRequest(t, nc, "mem.v1.session.j1.context", []byte(`{}`), true)
	for _, want := range []string{`"layer":"rom"`, `"content":"Be brief."`, `"content":"hello there"`, `"ROLE_USER"`} {
		if !strings.Contains(strings.ReplaceAll(string(body), " ", ""), strings.ReplaceAll(want, " ", "")) {
			t.Fatalf("context %s lacks %s", body, want)
		}
	}
}

// TestServiceDiscovery checks the micro service answers $SRV.PING and INFO.
func TestServiceDiscovery(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	rep, err := nc.Request("$SRV.INFO.memory", nil, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"memory"`, "mem.v1.session.*.append", "mem.v1.session.*.context"} {
		if !strings.Contains(string(rep.Data), want) {
			t.Fatalf("INFO %s lacks %s", rep.Data, want)
		}
	}
}
