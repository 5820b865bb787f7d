package node_test

import (
	"strings"
)

// addHTTPAttacks adds the HTTP API's cases to the tenant attack suite: a1
// (with its own bearer token, or none, or a wrong one) against what
// belongs to a2, u2 and the admin. Over HTTP no NATS import narrows what
// a1 reaches: every refusal is the node's own check.
func addHTTPAttacks(tn *tenantNode, v victims, add func(want, name string, run func() outcome)) {
	as := func(hdr []string, method, path, body string, more ...string) func() outcome {
		return func() outcome {
			return tn.httpDo(method, path, []byte(body), append(append([]string{}, hdr...), more...)...)
		}
	}
	a1 := bearer("a1")
	// Identity: no token, a wrong one, another scheme, two headers' worth.
	add("401", "http no token", as(nil, "POST", "/v1/session/s-a2/context", `{}`))
	add("401", "http wrong token", as([]string{"Authorization", "Bearer a2-http-tokenX"}, "POST", "/v1/session/s-a2/context", `{}`))
	add("401", "http basic auth", as([]string{"Authorization", "Basic YTI6YTItc2VjcmV0"}, "POST", "/v1/session/s-a2/context", `{}`))
	add("401", "http empty bearer", as([]string{"Authorization", "Bearer "}, "POST", "/v1/agent/a2/get", `{"key":"secret"}`))
	add("401", "http token as a query", as(nil, "POST", "/v1/session/s-a2/context?access_token=a2-http-token", `{}`))
	// a1's valid token against a2's session, every endpoint.
	for _, op := range []string{"create", "append", "context", "get", "kernel", "state", "status", "recall", "search", "promote", "clear_recalled", "watch"} {
		body := `{}`
		switch op {
		case "append":
			body = `{"messages":[{"role":"user","content":"x"}]}`
		case "status":
			body = `{"action":"terminate"}`
		case "create":
			body = `{"user_id":"u2"}`
		case "promote":
			body = `{"message_ids":["m1"]}`
		}
		add("403", "http session s-a2 "+op, as(a1, "POST", "/v1/session/s-a2/"+op, body))
	}
	add("403", "http session s-a2 watch (SSE)", as(a1, "GET", "/v1/session/s-a2/watch", ""))
	// Over NATS a1's imports stop these before the node; over HTTP the node does.
	for op, body := range map[string]string{
		"get": `{"key":"secret"}`, "put": `{"key":"secret","value":"eA=="}`, "delete": `{"key":"secret"}`, "list": `{}`,
		"history": `{"key":"secret"}`, "search": `{"query":"secret"}`, "watch": `{}`, "rollback": `{"key":"secret","to_version":1}`,
	} {
		add("403", "http agent a2 "+op, as(a1, "POST", "/v1/agent/a2/"+op, body))
		add("403", "http scope user u2 "+op, as(a1, "POST", "/v1/scope/user/u2/"+op, body))
	}
	for _, p := range []string{"/v1/session/s-a2/erase", "/v1/agent/a2/erase", "/v1/user/u2/erase", "/v1/scope/user/u2/erase", "/v1/scope/swarm/x/erase"} {
		add("403", "http erase "+p, as(a1, "POST", p, `{"reason":"attack"}`))
	}
	add("403", "http data.get a2's data", as(a1, "POST", "/v1/data/get", `{"id":"`+v.dataID+`"}`))
	add("403", "http sessions.list user u2", as(a1, "POST", "/v1/sessions/list", `{"user_id":"u2"}`))
	add("403", "http app put (reader)", as(a1, "POST", "/v1/scope/app/shop/put", `{"key":"policy","value":"eA=="}`))
	// A forged identity header travels nowhere: the caller is the token's.
	add("403", "http forged Nats-Request-Info (admin)", as(a1, "POST", "/v1/scope/app/shop/put", `{"key":"policy","value":"eA=="}`,
		"Nats-Request-Info", `{"acc":"ADMIN","user":"ops"}`))
	add("403", "http claim user u2 in a body", as(a1, "POST", "/v1/session/s-hx/create", `{"user_id":"u2"}`))
	// Browsers: another origin is refused even with a valid token.
	add("403", "http bad Origin", as(a1, "POST", "/v1/session/s-a1/context", `{}`, "Origin", "https://evil.example"))
	add("403", "http Origin null", as(a1, "POST", "/v1/session/s-a1/context", `{}`, "Origin", "null"))
	// Oversize and malformed bodies.
	add("413", "http oversize body (8 MiB)", as(a1, "POST", "/v1/session/s-a1/append",
		`{"messages":[{"role":"user","content":"`+strings.Repeat("x", 8<<20)+`"}]}`))
	add("400", "http deeply nested JSON", as(a1, "POST", "/v1/session/s-a1/append",
		`{"messages":[`+strings.Repeat(`{"metadata":`, 20000)+`{}`+strings.Repeat(`}`, 20000)+`]}`))
	add("400", "http dotted id", as(a1, "POST", "/v1/session/s-a2.x/context", `{}`))
	// Positive control: a1's own session over HTTP.
	add("ok", "http a1 appends to its own session", as(a1, "POST", "/v1/session/s-a1/append", `{"messages":[{"role":"user","content":"hello over http"}]}`))
}
