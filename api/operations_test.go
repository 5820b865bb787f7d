package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/node"
)

// TestOperationsAreTheRoutes: the operations table is what a node serves
// over NATS (every operation an endpoint with its subject, every endpoint
// that is not a catch-all an operation) and what its OpenAPI document
// declares (one POST per operation, at the subject's path, with its name;
// nothing else but the watches' GET and the document itself). The SDKs'
// types are generated from that document (their own tests check they are
// up to date), so the table is the one place that declares an operation.
func TestOperationsAreTheRoutes(t *testing.T) {
	n, nc := node.StartForTest(t, func(c *node.Config) { c.HTTPAddr = "127.0.0.1:0" })
	table := api.OperationSubjects()
	rep, err := nc.Request("$SRV.INFO.memory", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Endpoints []struct{ Name, Subject string } `json:"endpoints"`
	}
	if err := json.Unmarshal(rep.Data, &info); err != nil {
		t.Fatal(err)
	}
	served := map[string]string{}
	for _, e := range info.Endpoints {
		if strings.HasSuffix(e.Name, "_other") || strings.HasSuffix(e.Name, "_malformed") {
			continue // the catch-alls answering a malformed subject or an unknown operation
		}
		served[e.Name] = e.Subject
	}
	for name, subject := range table {
		if served[name] != subject {
			t.Errorf("operation %s (%s) is served as %q", name, subject, served[name])
		}
	}
	for name, subject := range served {
		if _, ok := table[name]; !ok {
			t.Errorf("endpoint %s (%s) is no declared operation", name, subject)
		}
	}
	resp, err := http.Get("http://" + n.MetricsAddr() + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	posts := map[string]string{}
	for path, item := range doc.Paths {
		for method, op := range item {
			switch method {
			case "post":
				posts[op.OperationID] = path
			case "get":
				if op.OperationID != "openapi" && !strings.HasSuffix(op.OperationID, "_watch_sse") {
					t.Errorf("GET %s (%s) is no watch", path, op.OperationID)
				}
			default:
				t.Errorf("%s %s: no operation is served so", method, path)
			}
		}
	}
	for name, subject := range table {
		toks := strings.Split(strings.TrimPrefix(subject, "mem.v1."), ".")
		for i, tk := range toks {
			if tk == "*" {
				toks[i] = "{}"
			}
		}
		want := "/v1/" + strings.Join(toks, "/")
		got := posts[name]
		for _, p := range []string{"session_id", "agent_id", "kind", "scope_id", "user_id"} {
			got = strings.ReplaceAll(got, "{"+p+"}", "{}")
		}
		if got != want {
			t.Errorf("operation %s: POST %q in the document, want %s", name, posts[name], want)
		}
		delete(posts, name)
	}
	for name, path := range posts {
		t.Errorf("the document's POST %s (%s) is no declared operation", path, name)
	}
}
