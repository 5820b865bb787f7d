package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/node"
)

// httpNode is a node with its HTTP listener on a free loopback port.
func httpNode(t *testing.T, mutate func(*node.Config)) (*node.Node, *nats.Conn, string) {
	t.Helper()
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		if mutate != nil {
			mutate(c)
		}
	})
	return n, nc, "http://" + n.MetricsAddr()
}

// post sends body to the HTTP API and returns the status and the reply.
func post(t *testing.T, base, path, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i]) // "": the header is not sent
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("POST %s: %d %q is not a JSON object: %v", path, resp.StatusCode, data, err)
	}
	return resp.StatusCode, out
}

// natsJSON sends body as JSON over NATS and returns the error code (0 ok)
// and the reply.
func natsJSON(t *testing.T, nc *nats.Conn, subject, body string) (int, map[string]any) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = []byte(body)
	m.Header.Set("Content-Type", "application/json")
	rep, err := nc.RequestMsg(m, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	var code int
	fmt.Sscan(rep.Header.Get("Nats-Service-Error-Code"), &code)
	var out map[string]any
	if err := json.Unmarshal(rep.Data, &out); err != nil {
		t.Fatalf("%s: %q: %v", subject, rep.Data, err)
	}
	return code, out
}

// TestHTTPAPIAnswersAsNATS drives a session over HTTP and checks each reply
// and error is what the same JSON request over NATS answers.
func TestHTTPAPIAnswersAsNATS(t *testing.T) {
	_, nc, base := httpNode(t, nil)
	code, out := post(t, base, "/v1/session/h1/create", `{"system_prompt":"be brief","user_id":"u1"}`)
	if code != 200 || out["result"] == nil {
		t.Fatalf("create: %d %v", code, out)
	}
	code, out = post(t, base, "/v1/session/h1/append", `{"command_id":"c1","messages":[{"role":"user","content":"my cat is called Tom"}]}`)
	if code != 200 {
		t.Fatalf("append: %d %v", code, out)
	}
	res := out["result"].(map[string]any)
	if res["duplicate"] != false {
		t.Fatalf("append: %v", out)
	}
	// A retry with the same command id is the duplicate, as over NATS.
	_, again := post(t, base, "/v1/session/h1/append", `{"command_id":"c1","messages":[{"role":"user","content":"my cat is called Tom"}]}`)
	if again["result"].(map[string]any)["duplicate"] != true {
		t.Fatalf("retry: %v", again)
	}
	_, viaNATS := natsJSON(t, nc, "mem.v1.session.h1.append", `{"command_id":"c1","messages":[{"role":"user","content":"my cat is called Tom"}]}`)
	if !jsonEqual(again, viaNATS) {
		t.Fatalf("the same retry answers differently:\nHTTP %v\nNATS %v", again, viaNATS)
	}
	code, out = post(t, base, "/v1/session/h1/context", `{"format":"openai"}`)
	if code != 200 || !strings.Contains(fmt.Sprint(out), "Tom") {
		t.Fatalf("context: %d %v", code, out)
	}
	_, viaNATS = natsJSON(t, nc, "mem.v1.session.h1.context", `{"format":"openai"}`)
	if !jsonEqual(out, viaNATS) {
		t.Fatalf("context differs:\nHTTP %v\nNATS %v", out, viaNATS)
	}
	// Errors: the same ErrorDetail, its code the HTTP status.
	for _, c := range []struct {
		path, subject, body string
		code                int
		field               string
	}{
		{"/v1/session/h1/append", "mem.v1.session.h1.append", `{"messages":[{"role":"wizard","content":"x"}]}`, 400, "messages[0].role"},
		{"/v1/session/h1/append", "mem.v1.session.h1.append", `{"messages":`, 400, "messages"},
		{"/v1/session/h1/apend", "mem.v1.session.h1.apend", `{}`, 404, "operation"},
		{"/v1/session/nope/context", "mem.v1.session.nope.context", `{}`, 404, ""},
		{"/v1/agent/a1/put", "mem.v1.agent.a1.put", `{"key":""}`, 400, "key"},
	} {
		hc, hout := post(t, base, c.path, c.body)
		nc, nout := natsJSON(t, nc, c.subject, c.body)
		if hc != c.code || nc != c.code || !jsonEqual(hout, nout) {
			t.Errorf("%s %s: HTTP %d %v, NATS %d %v; want %d", c.path, c.body, hc, hout, nc, nout, c.code)
		}
		if c.field != "" && hout["field"] != c.field {
			t.Errorf("%s %s: field %v, want %s", c.path, c.body, hout["field"], c.field)
		}
	}
	// Paths that are no subject.
	for _, p := range []string{"/v1/session/a.b/append", "/v1/session/*/append"} {
		if code, out := post(t, base, p, `{}`); code != 400 || out["field"] != "path" {
			t.Errorf("%s: %d %v, want 400 path", p, code, out)
		}
	}
	// fetch labels a string body text/plain, some clients send none: both
	// are read as JSON. A format that is not JSON is 415.
	for _, ct := range []string{"text/plain;charset=UTF-8", "", "application/vnd.api+json"} {
		if code, out := post(t, base, "/v1/session/h1/context", `{"format":"openai"}`, "Content-Type", ct); code != 200 {
			t.Errorf("Content-Type %q: %d %v, want 200", ct, code, out)
		}
	}
	if code, out := post(t, base, "/v1/session/h1/context", `{}`, "Content-Type", "application/xml"); code != 415 || out["field"] != "content-type" {
		t.Errorf("application/xml body: %d %v, want 415 content-type", code, out)
	}
}

func jsonEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestHTTPWatchStreamsServerSentEvents follows a session's changes as
// Server-Sent Events: each append is an event whose id is its stream
// sequence, and a reconnect with Last-Event-ID resumes after it.
func TestHTTPWatchStreamsServerSentEvents(t *testing.T) {
	_, _, base := httpNode(t, nil)
	if code, out := post(t, base, "/v1/session/w1/create", `{}`); code != 200 {
		t.Fatalf("create: %d %v", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/session/w1/watch?from_seq=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("watch: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for i := range 2 {
		if code, out := post(t, base, "/v1/session/w1/append", fmt.Sprintf(`{"messages":[{"role":"user","content":"note %d"}]}`, i)); code != 200 {
			t.Fatalf("append: %d %v", code, out)
		}
	}
	ev := readEvents(t, resp.Body, 3) // create, two appends
	var seqs []string
	for _, e := range ev {
		if e.event != "change" || !strings.Contains(e.data, `"seq"`) {
			t.Fatalf("event %+v", e)
		}
		seqs = append(seqs, e.id)
	}
	if !strings.Contains(ev[2].data, "note 1") {
		t.Fatalf("last event %q does not carry the second append", ev[2].data)
	}
	// Resume after the second event: only the third comes again.
	req2, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/session/w1/watch", nil)
	req2.Header.Set("Last-Event-ID", seqs[1])
	resp2, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if ev2 := readEvents(t, resp2.Body, 1); ev2[0].id != seqs[2] {
		t.Fatalf("resumed at %s, want %s", ev2[0].id, seqs[2])
	}
	// A malformed query is the HTTP reply itself.
	r3, _ := http.Get(base + "/v1/session/w1/watch?max_changes=999")
	if r3.StatusCode != 400 {
		t.Fatalf("watch with max_changes 999: %d", r3.StatusCode)
	}
	r3.Body.Close()
}

type sse struct{ id, event, data string }

// readEvents reads n events (comment lines skipped).
func readEvents(t *testing.T, body io.Reader, n int) []sse {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out []sse
	var cur sse
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	if len(out) < n {
		t.Fatalf("got %d events, want %d (%v)", len(out), n, sc.Err())
	}
	return out
}

// TestOpenAPIMatchesServedRoutes checks /v1/openapi.json against what the
// node serves: every endpoint of the NATS service ($SRV.INFO) that is an
// operation has its path in the document, every path of the document is an
// endpoint, and each answers over HTTP (not 404 operation, not 405).
func TestOpenAPIMatchesServedRoutes(t *testing.T) {
	_, nc, base := httpNode(t, nil)
	resp, err := http.Get(base + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	rep, err := nc.Request("$SRV.INFO.memory", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Endpoints []struct {
			Name    string `json:"name"`
			Subject string `json:"subject"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(rep.Data, &info); err != nil {
		t.Fatal(err)
	}
	served := map[string]string{} // path -> endpoint name
	for _, e := range info.Endpoints {
		toks := strings.Split(e.Subject, ".")
		if slices.Contains(toks, ">") || toks[len(toks)-1] == "*" {
			continue // a catch-all (malformed subjects, unknown operations)
		}
		served[pathOf(toks)] = e.Name
	}
	if len(served) < 30 {
		t.Fatalf("only %d endpoints served: %v", len(served), served)
	}
	for p, name := range served {
		item, ok := doc.Paths[p]
		if !ok {
			t.Errorf("endpoint %s (%s) is not in the OpenAPI document", name, p)
			continue
		}
		if item["post"]["operationId"] != name {
			t.Errorf("%s: operationId %v, want %s", p, item["post"]["operationId"], name)
		}
	}
	for p, item := range doc.Paths {
		if p == "/v1/openapi.json" {
			continue
		}
		if _, ok := served[p]; !ok {
			t.Errorf("document path %s is no endpoint", p)
		}
		concrete := strings.NewReplacer("{session_id}", "o1", "{agent_id}", "a1", "{kind}", "user", "{scope_id}", "u1").Replace(p)
		code, out := post(t, base, concrete, `{}`)
		if code == 405 || (code == 404 && out["field"] == "operation") {
			t.Errorf("POST %s: %d %v", concrete, code, out)
		}
		if _, ok := item["post"]; !ok {
			t.Errorf("%s: no post operation", p)
			continue
		}
		// Typed from the proto messages: the request and the reply are
		// references to component schemas, the errors to the error replies.
		b, _ := json.Marshal(item["post"])
		if strings.Count(string(b), `"$ref":"#/components/schemas/`) < 2 || !strings.Contains(string(b), `"$ref":"#/components/responses/Error400"`) {
			t.Errorf("%s is not typed (add its messages to api.opTypes): %s", p, b)
		}
	}
}

// pathOf is the HTTP path of a subject's tokens (mem.v1.session.*.append
// -> /v1/session/{session_id}/append).
func pathOf(toks []string) string {
	var segs []string
	for i, tk := range toks[2:] {
		if tk != "*" {
			segs = append(segs, tk)
			continue
		}
		prev := toks[2+i-1]
		switch {
		case prev == "scope":
			segs = append(segs, "{kind}")
		case i >= 2 && toks[2+i-2] == "scope":
			segs = append(segs, "{scope_id}")
		default:
			segs = append(segs, "{"+prev+"_id}")
		}
	}
	return "/v1/" + strings.Join(segs, "/")
}

// TestOpenAPISnapshot keeps sdk/openapi.json (what the SDKs' types are
// generated from) equal to the document a node serves. AGENTMEM_UPDATE=1
// rewrites it.
func TestOpenAPISnapshot(t *testing.T) {
	_, _, base := httpNode(t, nil)
	resp, err := http.Get(base + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	live, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	const snap = "../sdk/openapi.json"
	if os.Getenv("AGENTMEM_UPDATE") == "1" {
		if err := os.WriteFile(snap, append(live, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(committed), bytes.TrimSpace(live)) {
		t.Fatalf("%s differs from the node's /v1/openapi.json: run AGENTMEM_UPDATE=1 go test -run TestOpenAPISnapshot ./node/, then (cd sdk/ts && npm run gen)", snap)
	}
}

// TestHealthzOnAFreshNode: applied_seq is in /healthz from the start (0
// before anything is written), as the README shows it.
func TestHealthzOnAFreshNode(t *testing.T) {
	_, _, base := httpNode(t, nil)
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || h["status"] != "ok" {
		t.Fatalf("healthz %d %v", resp.StatusCode, h)
	}
	if _, ok := h["applied_seq"]; !ok {
		t.Fatalf("healthz without applied_seq: %v", h)
	}
}

// TestPerOperationMetrics: requests over HTTP and NATS are counted and timed
// by operation and code class, and the projection's lag is exported.
func TestPerOperationMetrics(t *testing.T) {
	_, nc, base := httpNode(t, nil)
	post(t, base, "/v1/session/m1/create", `{}`)
	post(t, base, "/v1/session/m1/append", `{"messages":[{"role":"user","content":"hi"}]}`)
	natsJSON(t, nc, "mem.v1.session.m1.append", `{"messages":[{"role":"user","content":"again"}]}`)
	post(t, base, "/v1/session/m1/append", `{"messages":[{"role":"wizard","content":"x"}]}`)
	post(t, base, "/v1/session/m1/apend", `{}`)
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`agentmem_api_requests_total{code="2xx",operation="session_append"} 2`,
		`agentmem_api_requests_total{code="4xx",operation="session_append"} 1`,
		`agentmem_api_requests_total{code="2xx",operation="session_create"} 1`,
		`agentmem_api_requests_total{code="4xx",operation="unknown"} 1`,
		`agentmem_api_request_seconds_count{code="2xx",operation="session_append"} 2`,
		`agentmem_projection_lag `,
		`agentmem_projection_applied_seq `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

// TestShutdownEndsWatchStreams: a node stops cleanly (within its drain
// bound, no error) while a client holds a watch stream open, and the
// stream ends (the client reconnects elsewhere).
func TestShutdownEndsWatchStreams(t *testing.T) {
	n, _, base := httpNode(t, nil)
	if code, out := post(t, base, "/v1/session/sd1/create", `{}`); code != 200 {
		t.Fatalf("create: %d %v", code, out)
	}
	resp, err := http.Get(base + "/v1/session/sd1/watch")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	readEvents(t, resp.Body, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a watch stream open: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Logf("stream ended: %v", err)
	}
}
