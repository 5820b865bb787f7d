package node_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/node"
)

// TestHTTPCrossOrigin: a page of an origin given with --http-origins may
// call the API from a browser. Its preflight is answered 204 with the
// methods and headers it may use; every reply, errors included, carries
// Access-Control-Allow-Origin and Vary: Origin. Any other origin is 403.
func TestHTTPCrossOrigin(t *testing.T) {
	const page = "http://localhost:3000"
	_, _, base := httpNode(t, func(c *node.Config) { c.HTTPOrigins = []string{page} })
	req, _ := http.NewRequest(http.MethodOptions, base+"/v1/session/c1/context", nil)
	req.Header.Set("Origin", page)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type, authorization")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != page ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Last-Event-ID") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/v1/session/c1/create", `{}`, 200},
		{"/v1/session/c1/context", `{"format":"wizard"}`, 400},
	} {
		code, out, h := postFrom(t, base+c.path, c.body, page)
		if code != c.code || h.Get("Access-Control-Allow-Origin") != page || !strings.Contains(h.Get("Vary"), "Origin") {
			t.Errorf("%s from %s: %d %v %v", c.path, page, code, out, h)
		}
	}
	code, out, h := postFrom(t, base+"/v1/session/c1/context", `{}`, "http://evil.example")
	if code != 403 || out["field"] != "origin" || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("foreign origin: %d %v %v", code, out, h)
	}
}

func postFrom(t *testing.T, url, body, origin string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "text/plain;charset=UTF-8") // as fetch labels a string
	req.Header.Set("Origin", origin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %q: %v", url, data, err)
	}
	return resp.StatusCode, out, resp.Header
}

// TestHTTPErrorsAreJSON: a path outside the API, a method an operation does
// not take, and a path that is no operation answer the API's JSON error.
func TestHTTPErrorsAreJSON(t *testing.T) {
	_, _, base := httpNode(t, nil)
	for _, c := range []struct {
		method, path string
		code         int
		field        string
	}{
		{http.MethodGet, "/nope", 404, "path"},
		{http.MethodPost, "/v2/session/s1/append", 404, "path"},
		{http.MethodGet, "/v1/session/s1/append", 405, "method"},
		{http.MethodPut, "/v1/session/s1/watch", 405, "method"},
		{http.MethodPost, "/v1/openapi.json", 405, "method"},
		{http.MethodPost, "/v1/session/s1/apend", 404, "operation"},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != c.code || out["field"] != c.field || out["code"] != float64(c.code) ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %v (%v), want %d %s", c.method, c.path, resp.StatusCode, out, err, c.code, c.field)
		}
		if c.code == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.path)
		}
	}
}

// TestHTTPWatchOpensAtOnce: the watch's headers and a first comment arrive
// at once, before any change; a session that does not exist, or was
// erased, is an error event naming the session instead of a silent stream.
func TestHTTPWatchOpensAtOnce(t *testing.T) {
	_, _, base := httpNode(t, nil)
	if code, out := post(t, base, "/v1/session/q1/create", `{}`); code != 200 {
		t.Fatalf("create: %d %v", code, out)
	}
	open := func(path, lastEventID string) (*http.Response, *bufio.Reader) {
		t.Helper()
		// Far below the 25 s a poll waits for a change.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		br := bufio.NewReader(resp.Body)
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, ":") {
			t.Fatalf("%s: first line %q %v, want a comment", path, line, err)
		}
		return resp, br
	}
	// Past the end of the log: nothing to send, the stream is open anyway.
	open("/v1/session/q1/watch", "999999")
	open("/v1/session/q1/watch?from_seq=999999", "")
	for _, id := range []string{"never-created", "q2"} {
		if id == "q2" {
			post(t, base, "/v1/session/q2/create", `{}`)
			if code, out := post(t, base, "/v1/session/q2/erase", `{}`); code != 200 {
				t.Fatalf("erase: %d %v", code, out)
			}
		}
		_, br := open("/v1/session/"+id+"/watch", "")
		ev := readEvents(t, br, 1)
		var e map[string]any
		if ev[0].event != "error" || json.Unmarshal([]byte(ev[0].data), &e) != nil || e["code"] != float64(404) {
			t.Errorf("watch of %s: %+v, want an error event 404", id, ev[0])
		}
	}
}

// TestHTTPReadsOwnWrites: a search right after an append, without min_seq,
// finds what was appended (the query waits, bounded, for the session's last
// command to be projected); so does an entry search right after a put.
func TestHTTPReadsOwnWrites(t *testing.T) {
	_, _, base := httpNode(t, nil)
	post(t, base, "/v1/session/r1/create", `{}`)
	for i := range 15 {
		id := "r1"
		body := `{"messages":[{"role":"user","content":"the pelican number ` + strings.Repeat("x", i) + ` lives in Lisbon"}]}`
		if code, out := post(t, base, "/v1/session/"+id+"/append", body); code != 200 {
			t.Fatalf("append: %d %v", code, out)
		}
		code, out := post(t, base, "/v1/session/"+id+"/search", `{"query":"pelican Lisbon","limit":20}`)
		if hits, _ := out["hits"].([]any); code != 200 || len(hits) != i+1 {
			t.Fatalf("search after append %d: %d, %d hits (%v)", i, code, len(hits), out)
		}
		post(t, base, "/v1/agent/ra/put", `{"key":"k`+strings.Repeat("y", i)+`","value":"`+b64("heron in Porto")+`"}`)
		code, out = post(t, base, "/v1/agent/ra/search", `{"query":"heron Porto","limit":20}`)
		if hits, _ := out["hits"].([]any); code != 200 || len(hits) != i+1 {
			t.Fatalf("entry search after put %d: %d, %d hits (%v)", i, code, len(hits), out)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
