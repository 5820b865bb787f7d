package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/mcpserver"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/tools"
)

// rpcReply is the part of a JSON-RPC reply the tests read.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestStdioSurvivesMalformedLines (issue 18, finding 5): the stdio server
// answers each malformed line with a JSON-RPC error and keeps serving: a
// well-formed initialize and tools/list after all of them are answered.
func TestStdioSurvivesMalformedLines(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	ex := &tools.Executor{Client: client.New(nc), Agent: "a1"}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcpserver.New(ex, "test").Run(ctx, mcpserver.NewLineTransport(inR, outW)) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		<-done
	})
	replies := bufio.NewReader(outR)
	send := func(line string) {
		t.Helper()
		if _, err := inW.Write([]byte(line + "\n")); err != nil {
			t.Fatalf("write %.40q: %v", line, err)
		}
	}
	next := func(what string) rpcReply {
		t.Helper()
		type lineOrErr struct {
			b   []byte
			err error
		}
		ch := make(chan lineOrErr, 1)
		go func() { b, err := replies.ReadBytes('\n'); ch <- lineOrErr{b, err} }()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("%s: no reply (the server stopped?): %v", what, r.err)
			}
			var rep rpcReply
			if err := json.Unmarshal(r.b, &rep); err != nil {
				t.Fatalf("%s: reply %q is not JSON: %v", what, r.b, err)
			}
			return rep
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no reply in 5 s", what)
		}
		return rpcReply{}
	}
	for _, bad := range []string{
		`[]`, `null`, "\xff{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", `{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`,
		strings.Repeat("[", 100000), strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
		strings.Repeat(`{"a":`, 50000) + "1" + strings.Repeat("}", 50000),
		`{`, `"just a string"`, `42`, `{"jsonrpc":"2.0","id":[1],"method":"x"}`, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, `{"jsonrpc":"1.0","id":1}`, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"} trailing",
	} {
		send(bad)
		rep := next(bad[:min(len(bad), 40)])
		if rep.Error == nil || (rep.Error.Code != -32700 && rep.Error.Code != -32600) {
			t.Fatalf("%.40q: reply %+v, want a parse or invalid-request error", bad, rep)
		}
		t.Logf("%-45.40q -> %d %s", bad, rep.Error.Code, rep.Error.Message)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if rep := next("initialize"); rep.Error != nil || len(rep.Result) == 0 {
		t.Fatalf("initialize after malformed lines: %+v", rep)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if rep := next("tools/list"); rep.Error != nil || !strings.Contains(string(rep.Result), tools.MemoryWrite) {
		t.Fatalf("tools/list after malformed lines: %+v", rep)
	}
	// After initialize: a response to nothing, a call with params of the
	// wrong type, an unknown method.
	send(`{"jsonrpc":"2.0","id":77,"result":{}}`)
	for _, bad := range []string{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":5}`, `{"jsonrpc":"2.0","id":6,"method":"no/such"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_write","arguments":[1,2]}}`} {
		send(bad)
		if rep := next(bad); rep.Error == nil && !strings.Contains(string(rep.Result), `"isError":true`) {
			t.Fatalf("%s: %+v, want an error", bad, rep)
		}
	}
	send(`null`)
	if rep := next("null after initialize"); rep.Error == nil {
		t.Fatalf("null after initialize: %+v", rep)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if rep := next("tools/list again"); rep.Error != nil || string(rep.ID) != "3" {
		t.Fatalf("tools/list again: %+v", rep)
	}
}

// TestHTTPChecksOriginHostAndCapsSessions (issue 18, finding 6): a
// cross-origin request or a foreign Host is refused (403) before any
// session is made; open sessions are capped (503 max_http_sessions), and
// closing one makes room.
func TestHTTPChecksOriginHostAndCapsSessions(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	ex := &tools.Executor{Client: client.New(nc), Agent: "a1"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts := mcpserver.HTTPOptions{SessionTimeout: time.Minute, MaxSessions: 2, AllowedOrigins: []string{"https://app.example"}}
	go func() {
		done <- mcpserver.ServeHTTP(ctx, mcpserver.New(ex, "test"), ln, opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	url := "http://" + ln.Addr().String() + "/mcp"
	initialize := func(hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
				continue
			}
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id") + " " + string(body)
	}
	for _, c := range []struct {
		name string
		hdr  []string
	}{
		{"Origin evil", []string{"Origin", "http://evil.example"}},
		{"Origin null", []string{"Origin", "null"}},
		{"Origin same host other scheme port", []string{"Origin", "http://127.0.0.1:1"}},
		{"Origin evil, Sec-Fetch-Site same-origin", []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "same-origin"}},
		{"Host evil (DNS rebinding)", []string{"Host", "evil.example"}},
		{"Host evil with its Origin", []string{"Host", "evil.example", "Origin", "http://evil.example"}},
	} {
		if code, body := initialize(c.hdr...); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", c.name, code, body)
		}
	}
	var ids []string
	for _, hdr := range [][]string{{"Origin", "https://app.example"}, nil} {
		code, body := initialize(hdr...)
		if code != http.StatusOK {
			t.Fatalf("initialize with %v: %d %s", hdr, code, body)
		}
		ids = append(ids, strings.Fields(body)[0])
	}
	code, body := initialize()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "max_http_sessions") {
		t.Fatalf("a third session beyond the cap of 2: %d %s, want 503 max_http_sessions", code, body)
	}
	// Closing a session makes room.
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", ids[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if code, body := initialize(); code != http.StatusOK {
		t.Fatalf("after closing a session: %d %s", code, body)
	}
}
