package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tools"
)

// run executes one tool call and decodes its result into out (a map).
func run(t *testing.T, ex *tools.Executor, name, args string) map[string]any {
	t.Helper()
	res, err := ex.Execute(context.Background(), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	var out map[string]any
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatalf("%s: result is not a JSON object: %s", name, res)
	}
	return out
}

func list(m map[string]any, key string) []any { l, _ := m[key].([]any); return l }
func obj(v any) map[string]any                { m, _ := v.(map[string]any); return m }

// Each tool round-trips through Execute against a real node, and what it
// returns agrees with the service's own answer through the Go client.
func TestExecuteRoundTrip(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ex := &tools.Executor{Client: c, Agent: "a1"}
	ctx := context.Background()

	rep := run(t, ex, tools.SessionAppend, `{"session_id":"s1","system_prompt":"Be brief.","messages":[
		{"role":"user","content":"Our churn rate last quarter was 4.2 percent."},
		{"role":"assistant","content":"","tool_calls":[{"id":"call1","name":"lookup","arguments":"{\"q\":\"churn\"}"}]},
		{"role":"tool","tool_call_id":"call1","content":"churn=4.2"}]}`)
	if rep["created"] != true || len(list(rep, "message_ids")) != 3 || len(list(rep, "tokens")) != 3 {
		t.Fatalf("first append: %v", rep)
	}
	info, err := c.Get(ctx, "s1")
	if err != nil || info.GetTotalMessages() != 3 || info.GetAgentId() != "a1" {
		t.Fatalf("session after append: %v %v", info, err)
	}
	rep = run(t, ex, tools.SessionAppend, `{"session_id":"s1","messages":[{"role":"user","content":"And the quarter before?"}]}`)
	if rep["created"] != false || rep["version"].(float64) != float64(info.GetVersion()+1) {
		t.Fatalf("second append: %v (session version was %d)", rep, info.GetVersion())
	}

	cx := run(t, ex, tools.SessionContext, `{"session_id":"s1"}`)
	want, err := c.Context(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	msgs := list(cx, "messages")
	if cx["format"] != "layers" || len(msgs) != len(want.GetMessages()) {
		t.Fatalf("context: %v, service has %d messages", cx, len(want.GetMessages()))
	}
	for i, m := range want.GetMessages() {
		got := obj(msgs[i])
		if got["content"] != m.GetContent() || got["layer"] != m.GetLayer() || got["id"] != m.GetId() {
			t.Errorf("context message %d: %v, service says %v", i, got, m)
		}
	}
	oa := run(t, ex, tools.SessionContext, `{"session_id":"s1","format":"openai"}`)
	first := obj(list(oa, "messages")[0])
	if first["role"] != "system" || first["content"] == "" {
		t.Errorf("openai context starts with %v", first)
	}
	an := run(t, ex, tools.SessionContext, `{"session_id":"s1","format":"anthropic"}`)
	if an["system"] == "" || obj(list(an, "messages")[0])["role"] != "user" {
		t.Errorf("anthropic context: %v", an)
	}

	rc := run(t, ex, tools.RecallConversation, `{"session_id":"s1","offset":1,"limit":2}`)
	wantRecall, err := c.Recall(ctx, "s1", &memoryv1.RecallRequest{Offset: 1, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rc["total"].(float64) != 4 || len(list(rc, "messages")) != 2 {
		t.Fatalf("recall: %v", rc)
	}
	for i, m := range wantRecall.GetMessages() {
		got := obj(list(rc, "messages")[i])
		if got["id"] != m.GetId() || got["content"] != m.GetContent() {
			t.Errorf("recall %d: %v, service says %v", i, got, m)
		}
	}
	if tc := list(obj(list(rc, "messages")[0]), "tool_calls"); len(tc) != 1 || obj(tc[0])["name"] != "lookup" {
		t.Errorf("recalled assistant message lost its tool call: %v", rc)
	}

	// A message no longer verbatim in the context (compressed away) is what
	// search can promote back.
	fillUntilCompressed(t, c, "s2")
	sr := run(t, ex, tools.SearchConversation, `{"session_id":"s2","query":"zanzibar","promote":true}`)
	hits := list(sr, "hits")
	if len(hits) == 0 || obj(sr["promoted"]) == nil || obj(sr["promoted"])["promoted_tokens"].(float64) == 0 {
		t.Fatalf("search: %v", sr)
	}
	promoted, err := c.Context(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if got := obj(sr["promoted"])["promoted_tokens"].(float64); float64(promoted.GetLayers().GetPromoted()) != got {
		t.Errorf("search promoted %v tokens, the service's context has %d", got, promoted.GetLayers().GetPromoted())
	}
	cl := run(t, ex, tools.ClearRecalledContext, `{"session_id":"s2"}`)
	cleared, err := c.Context(ctx, "s2")
	if err != nil || cleared.GetLayers().GetPromoted() != 0 || cl["version"].(float64) != float64(cleared.GetVersion()) {
		t.Errorf("clear_recalled_context: %v; service context %v %v", cl, cleared.GetLayers(), err)
	}

	w := run(t, ex, tools.MemoryWrite, `{"scope":"agent","key":"pref/units","value":"metric, please","memory_type":"semantic","tags":["prefs"],"importance":0.8}`)
	ent, err := c.GetEntry(ctx, client.Agent("a1"), "pref/units", 0)
	if err != nil || string(ent.GetValue()) != "metric, please" || obj(w["entry"])["version"].(float64) != float64(ent.GetVersion()) {
		t.Fatalf("memory_write: %v; service has %v %v", w, ent, err)
	}
	run(t, ex, tools.MemoryWrite, `{"scope":"agent","key":"pref/units","value":"imperial","expected_version":1}`)
	r := run(t, ex, tools.MemoryRead, `{"scope":"agent","key":"pref/units"}`)
	if e := obj(r["entry"]); e["value"] != "imperial" || e["version"].(float64) != 2 {
		t.Errorf("memory_read: %v", r)
	}
	if e := obj(run(t, ex, tools.MemoryRead, `{"scope":"agent","key":"pref/units","version":1}`)["entry"]); e["value"] != "metric, please" || e["memory_type"] != "semantic" {
		t.Errorf("memory_read version 1: %v", e)
	}
	run(t, ex, tools.MemoryWrite, `{"scope":"global","key":"motd","value":"hello all"}`)
	if g, err := c.GetEntry(ctx, client.Global(), "motd", 0); err != nil || string(g.GetValue()) != "hello all" {
		t.Errorf("global write: %v %v", g, err)
	}
	l := run(t, ex, tools.MemoryList, `{"scope":"agent","prefix":"pref/"}`)
	wantList, err := c.ListEntries(ctx, client.Agent("a1"), &memoryv1.ListEntriesRequest{Prefix: "pref/"})
	if err != nil || len(list(l, "entries")) != len(wantList.GetEntries()) || len(wantList.GetEntries()) != 1 {
		t.Errorf("memory_list: %v; service lists %v %v", l, wantList, err)
	}
	s := run(t, ex, tools.MemorySearch, `{"scope":"agent","query":"imperial"}`)
	if h := list(s, "hits"); len(h) != 1 || obj(obj(h[0])["entry"])["key"] != "pref/units" {
		t.Errorf("memory_search: %v", s)
	}
	h := run(t, ex, tools.MemoryHistory, `{"scope":"agent","key":"pref/units"}`)
	wantHist, err := c.History(ctx, client.Agent("a1"), "pref/units")
	if err != nil || len(list(h, "versions")) != len(wantHist) || len(wantHist) != 2 {
		t.Errorf("memory_history: %v; service has %d versions %v", h, len(wantHist), err)
	}
}

// Failures are *Errors naming the argument (or the service's field) and
// the reason, with the service's code.
func TestExecuteErrors(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	ex := &tools.Executor{Client: client.New(nc), Agent: "a1"}
	run(t, ex, tools.SessionAppend, `{"session_id":"s1","messages":[{"role":"user","content":"hi"}]}`)
	cases := []struct {
		name, tool, args string
		code             int
		field            string
	}{
		{"unknown tool", "memory_delete_everything", `{}`, 404, "name"},
		{"not JSON", tools.MemoryRead, `{"scope":`, 400, "arguments"},
		{"missing argument", tools.SessionContext, `{}`, 400, "session_id"},
		{"wrong type", tools.RecallConversation, `{"session_id":"s1","offset":"ten"}`, 400, "offset"},
		{"role not lowercase", tools.SessionAppend, `{"session_id":"s1","messages":[{"role":"ROLE_USER","content":"x"}]}`, 400, "messages[0].role"},
		{"nested missing", tools.SessionAppend, `{"session_id":"s1","messages":[{"role":"assistant","tool_calls":[{"id":"c"}]}]}`, 400, "messages[0].tool_calls[0].name"},
		{"unknown argument", tools.MemoryRead, `{"scope":"agent","key":"k","agent_id":"a2"}`, 400, "agent_id"},
		{"bad scope", tools.MemoryList, `{"scope":"tenant:x"}`, 400, "scope"},
		{"bad session id", tools.SessionContext, `{"session_id":"a.b"}`, 400, "session_id"},
		{"limit out of range", tools.RecallConversation, `{"session_id":"s1","limit":500}`, 400, "limit"},
		{"no such session", tools.SessionContext, `{"session_id":"nope"}`, 404, "session_id"},
		{"no create", tools.SessionAppend, `{"session_id":"s2","create_if_missing":false,"messages":[{"role":"user","content":"x"}]}`, 404, "session_id"},
		{"no such key", tools.MemoryRead, `{"scope":"agent","key":"missing"}`, 404, "key"},
		{"compare and set", tools.MemoryWrite, `{"scope":"agent","key":"k","value":"v","expected_version":7}`, 409, "expected_version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ex.Execute(context.Background(), tc.tool, json.RawMessage(tc.args))
			var te *tools.Error
			if !errors.As(err, &te) {
				t.Fatalf("got %s, %v; want an *Error", res, err)
			}
			if te.Code != tc.code || te.Field != tc.field || te.Message == "" {
				t.Errorf("got %+v, want %d %s", te, tc.code, tc.field)
			}
			var back struct{ Error tools.Error }
			if json.Unmarshal(te.JSON(), &back) != nil || back.Error != *te {
				t.Errorf("JSON %s does not carry the error", te.JSON())
			}
		})
	}
	noAgent := &tools.Executor{Client: ex.Client}
	if _, err := noAgent.Execute(context.Background(), tools.MemoryRead, json.RawMessage(`{"scope":"agent","key":"k"}`)); tools.AsError(err).Field != "scope" {
		t.Errorf("scope agent without an agent id: %v", err)
	}
}

// fillUntilCompressed creates session id with a small budget and appends
// turns until its first message (the one saying "zanzibar") has left the
// verbatim layer.
func fillUntilCompressed(t *testing.T, c *client.Client, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{MaxContextTokens: 6000, ReservedOutputTokens: 1000}); err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("the weather report talks about clouds and rain over the hills ", 20)
	if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "We met in zanzibar in 2019."}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: filler}); err != nil {
			t.Fatal(err)
		}
		info, err := c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.GetCompressions() > 0 {
			cx, err := c.Context(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(cx.GetMessages(), func(m *memoryv1.ContextMessage) bool {
				return m.GetLayer() == "l1" && strings.Contains(m.GetContent(), "zanzibar")
			}) {
				return
			}
		}
	}
	t.Fatal("the first message never left L1")
}
