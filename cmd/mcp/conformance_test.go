package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

const conformanceDir = "../../conformance/mcp"

// agent is one agent of examples/auth.
type agent struct {
	Agent    string `json:"agent"`
	User     string `json:"user"`
	Password string `json:"password"`
}

// transcript is what conformance/mcp/run.mjs writes.
type transcript struct {
	Runs []struct {
		Transport   string `json:"transport"`
		Agent       string `json:"agent"`
		IntrudingOn string `json:"intruding_on"`
		SessionID   string `json:"session_id"`
		Calls       []struct {
			Tool    string          `json:"tool"`
			IsError bool            `json:"is_error"`
			Result  json.RawMessage `json:"result"`
		} `json:"calls"`
		Final struct {
			Context, OpenAI, Anthropic, Recall, Read, List, History json.RawMessage
		} `json:"final"`
	} `json:"runs"`
}

// The official TypeScript SDK client (conformance/mcp, installed by .ci/run
// with npm ci) drives the built agentmem-mcp over stdio and Streamable
// HTTP as agents a1 and a2 of examples/auth, against a node running that
// tenant configuration: every tool is called, the results agree with the
// service's own answers through the Go client, and neither agent reaches
// the other's memory or sessions through MCP.
func TestConformanceTypeScriptSDK(t *testing.T) {
	nodeBin, err := exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join(conformanceDir, "node_modules", "@modelcontextprotocol", "sdk"))
	if err != nil || statErr != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("node or %s/node_modules missing (run npm ci there; CI fails instead of skipping)", conformanceDir)
		}
		t.Fatalf("node (%v) or %s/node_modules (%v) missing: .ci/run installs them", err, conformanceDir, statErr)
	}
	bin := build(t)
	n, _ := node.StartForTest(t, func(c *node.Config) {
		c.NATSConfig, c.Tenants = "../../examples/auth/nats.conf", "../../examples/auth/tenants.json"
		c.NATSUser, c.NATSPassword = "node", "node-secret"
		c.NATSAPIUser, c.NATSAPIPassword = "node-api", "node-api-secret"
	})
	agents := []agent{{"a1", "agent-a1", "a1-secret"}, {"a2", "agent-a2", "a2-secret"}}
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"bin": bin, "nats_url": n.ClientURL(), "out": filepath.Join(dir, "transcript.json"), "agents": agents})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join(conformanceDir, "run.mjs"))
	cmd := exec.CommandContext(waitCtx(t, 90*time.Second), nodeBin, script, cfgPath)
	out, err := cmd.CombinedOutput()
	t.Logf("run.mjs: %s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("run.mjs: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "transcript.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr transcript
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatal(err)
	}
	clients := map[string]*client.Client{}
	for _, a := range agents {
		nc, err := nats.Connect(n.ClientURL(), nats.UserInfo(a.User, a.Password))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		clients[a.Agent] = client.New(nc)
	}
	runs, intrusions := 0, 0
	for _, r := range tr.Runs {
		if r.IntrudingOn != "" {
			intrusions++
			for _, c := range r.Calls {
				if c.Tool != "memory_list" && !c.IsError {
					t.Errorf("%s %s reached %s with %s: %s", r.Transport, r.Agent, r.IntrudingOn, c.Tool, c.Result)
				}
			}
			continue
		}
		runs++
		checkRun(t, clients[r.Agent], r.Agent, r.SessionID, "profile/"+r.Transport+"/colour", r.Final.Context, r.Final.Recall, r.Final.Read, r.Final.List, r.Final.History, r.Final.OpenAI)
		called := map[string]bool{}
		for _, c := range r.Calls {
			called[c.Tool] = true
		}
		if len(called) != 10 {
			t.Errorf("%s %s called %d tools: %v", r.Transport, r.Agent, len(called), called)
		}
	}
	if runs != 4 || intrusions != 4 {
		t.Errorf("%d runs and %d intrusions, want 4 and 4 (2 transports x 2 agents)", runs, intrusions)
	}
	// What the intruders tried left each agent's memory as its owner wrote it.
	for _, a := range agents {
		for _, transport := range []string{"stdio", "http"} {
			key := "profile/" + transport + "/colour"
			h, err := clients[a.Agent].History(waitCtx(t, 5*time.Second), client.Agent(a.Agent), key)
			if err != nil {
				t.Fatal(err)
			}
			var values []string
			for _, e := range h {
				values = append(values, string(e.GetValue()))
			}
			if want := []string{"teal", "teal, not green"}; !slices.Equal(values, want) {
				t.Errorf("%s %s history %q, want %q", a.Agent, key, values, want)
			}
			secret, err := clients[a.Agent].History(waitCtx(t, 5*time.Second), client.Agent(a.Agent), "secret/"+transport+"/"+a.Agent)
			if err != nil || len(secret) != 1 || string(secret[0].GetValue()) != "only "+a.Agent+" knows" {
				t.Errorf("%s's secret after the intrusions: %v %v", a.Agent, secret, err)
			}
			rc, err := clients[a.Agent].Recall(waitCtx(t, 5*time.Second), "mcp-"+transport+"-"+a.Agent, &memoryv1.RecallRequest{Limit: 50})
			if err != nil || rc.GetTotal() != 4 || strings.Contains(fmt.Sprint(rc.GetMessages()), "hacked") {
				t.Errorf("%s's session after the intrusions: %v %v", a.Agent, rc, err)
			}
		}
	}
}

// checkRun compares the final reads of one run with the service's answers
// to the same questions through the Go client, as the same agent.
func checkRun(t *testing.T, c *client.Client, agentID, session, key string, context, recall, read, list, history, openai json.RawMessage) {
	t.Helper()
	ctx := waitCtx(t, 10*time.Second)
	type msg struct{ ID, Layer, Content, Role string }
	var cx struct{ Messages []msg }
	mustDecode(t, context, &cx)
	want, err := c.Context(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if len(cx.Messages) != len(want.GetMessages()) {
		t.Fatalf("%s context: %d messages, service %d", session, len(cx.Messages), len(want.GetMessages()))
	}
	for i, m := range want.GetMessages() {
		if g := cx.Messages[i]; g.ID != m.GetId() || g.Layer != m.GetLayer() || g.Content != m.GetContent() {
			t.Errorf("%s context %d: %+v, service %v", session, i, g, m)
		}
	}
	var rc struct {
		Total    uint64
		Messages []msg
	}
	mustDecode(t, recall, &rc)
	wantRecall, err := c.Recall(ctx, session, &memoryv1.RecallRequest{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Total != wantRecall.GetTotal() || rc.Total != 4 || len(rc.Messages) != len(wantRecall.GetMessages()) {
		t.Fatalf("%s recall: %d/%d, service %d/%d", session, len(rc.Messages), rc.Total, len(wantRecall.GetMessages()), wantRecall.GetTotal())
	}
	for i, m := range wantRecall.GetMessages() {
		if g := rc.Messages[i]; g.ID != m.GetId() || g.Content != m.GetContent() || g.Role != strings.ToLower(strings.TrimPrefix(m.GetRole().String(), "ROLE_")) {
			t.Errorf("%s recall %d: %+v, service %v", session, i, g, m)
		}
	}
	var oa struct{ Messages []json.RawMessage }
	mustDecode(t, openai, &oa)
	wantOA, err := c.ContextAs(ctx, session, memoryv1.ContextFormat_CONTEXT_FORMAT_OPENAI)
	if err != nil || len(oa.Messages) != len(wantOA.GetRendered().GetOpenai()) {
		t.Errorf("%s openai: %d messages, service %d (%v)", session, len(oa.Messages), len(wantOA.GetRendered().GetOpenai()), err)
	}
	type entry struct {
		Key, Value string
		Version    uint64
	}
	var rd struct{ Entry entry }
	mustDecode(t, read, &rd)
	cur, err := c.GetEntry(ctx, client.Agent(agentID), key, 0)
	if err != nil || rd.Entry.Key != key || rd.Entry.Value != string(cur.GetValue()) || rd.Entry.Version != cur.GetVersion() || cur.GetVersion() != 2 {
		t.Errorf("%s memory_read %+v, service has %v (%v)", agentID, rd.Entry, cur, err)
	}
	var ls struct{ Entries []entry }
	mustDecode(t, list, &ls)
	wantList, err := c.ListEntries(ctx, client.Agent(agentID), &memoryv1.ListEntriesRequest{Prefix: strings.TrimSuffix(key, "colour")})
	if err != nil || len(ls.Entries) != len(wantList.GetEntries()) || ls.Entries[0].Key != wantList.GetEntries()[0].GetKey() {
		t.Errorf("%s memory_list %+v, service %v (%v)", agentID, ls.Entries, wantList, err)
	}
	var hs struct{ Versions []entry }
	mustDecode(t, history, &hs)
	wantHist, err := c.History(ctx, client.Agent(agentID), key)
	if err != nil || len(hs.Versions) != len(wantHist) {
		t.Fatalf("%s memory_history %d versions, service %d (%v)", agentID, len(hs.Versions), len(wantHist), err)
	}
	for i, v := range hs.Versions {
		if v.Version != wantHist[i].GetVersion() || v.Value != string(wantHist[i].GetValue()) {
			t.Errorf("%s history %d: %+v, service %v", agentID, i, v, wantHist[i])
		}
	}
}

func mustDecode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}
