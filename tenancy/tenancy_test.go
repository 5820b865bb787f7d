package tenancy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

func example(t *testing.T) *Directory {
	t.Helper()
	d, err := Load("../examples/auth/tenants.json")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func hdr(vals ...string) nats.Header { return nats.Header{RequestInfoHeader: vals} }

func TestIdentify(t *testing.T) {
	d := example(t)
	for _, tc := range []struct {
		name string
		h    nats.Header
		want string // principal, or "" for a refusal
	}{
		{"agent", hdr(`{"acc":"a1","user":"agent-a1","rtt":1}`), "a1"},
		{"front end by user", hdr(`{"acc":"UI","user":"front-u2"}`), "front-u2"},
		{"no header (same account, or no import)", nats.Header{}, ""},
		{"two values", hdr(`{"acc":"a1","user":"agent-a1"}`, `{"acc":"ADMIN","user":"ops"}`), ""},
		{"node's own account", hdr(`{"acc":"MEM","user":"node"}`), ""},
		{"unknown account", hdr(`{"acc":"a9","user":"x"}`), ""},
		{"known account, unknown user", hdr(`{"acc":"UI","user":"front-u9"}`), ""},
		{"not JSON", hdr(`acc=a1`), ""},
		{"no account", hdr(`{"user":"agent-a1"}`), ""},
		{"near-miss key is the client's own", nats.Header{"Nats-Request-Info ": {`{"acc":"ADMIN","user":"ops"}`}}, ""},
	} {
		c, err := d.Identify(tc.h)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: identified %q, want a refusal", tc.name, c.Principal)
		case tc.want == "":
			var de *DeniedError
			if !errors.As(err, &de) || de.Field != "identity" {
				t.Errorf("%s: %v, want a DeniedError on identity", tc.name, err)
			}
		case err != nil || c.Principal != tc.want:
			t.Errorf("%s: %v %v, want %s", tc.name, c, err, tc.want)
		}
	}
}

func TestAccessRules(t *testing.T) {
	d := example(t)
	who := func(acc, user string) *Caller {
		c, err := d.Identify(hdr(`{"acc":"` + acc + `","user":"` + user + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a1, front2, ops := who("a1", "agent-a1"), who("UI", "front-u2"), who("ADMIN", "ops")
	anyone := Unrestricted(DefaultLimits())
	allowed := func(name string, err error, want bool) {
		t.Helper()
		if (err == nil) != want {
			t.Errorf("%s: %v, want allowed=%v", name, err, want)
		}
	}
	allowed("a1 own session by user", a1.Session("s", "u1", "", true), true)
	allowed("a1 own session by agent", a1.Session("s", "u9", "a1", true), true)
	allowed("a1 other's session", a1.Session("s", "u2", "a2", false), false)
	allowed("reader reads", front2.Session("s", "u2", "a2", false), true)
	allowed("reader writes", front2.Session("s", "u2", "a2", true), false)
	allowed("create for own user", a1.CreateSession("u1", "a1", "", "", ""), true)
	allowed("create for another user", a1.CreateSession("u2", "", "", "", ""), false)
	allowed("create as another agent", a1.CreateSession("u1", "a2", "", "", ""), false)
	allowed("create for nobody", a1.CreateSession("", "", "", "", ""), false)
	allowed("create in own project and app", a1.CreateSession("u1", "a1", "p1", "shop", ""), true)
	allowed("create in another project", a1.CreateSession("u1", "a1", "p2", "", ""), false)
	allowed("create in another app", a1.CreateSession("u1", "", "", "crm", ""), false)
	allowed("create by agent in another project", a1.CreateSession("", "a1", "p2", "shop", ""), false)
	allowed("admin creates in any project", ops.CreateSession("u1", "", "p2", "crm", ""), true)
	allowed("configure own agent scope", a1.Configure("agent", "a1"), true)
	allowed("configure another agent's scope", a1.Configure("agent", "a2"), false)
	for _, sc := range [][2]string{{"workflow", "w1"}, {"global", "global"}, {"user", "u1"}, {"session", "s1"}, {"app", "shop"}, {"project", "p1"}} {
		allowed("member configures "+sc[0], a1.Configure(sc[0], sc[1]), false)
		allowed("admin configures "+sc[0], ops.Configure(sc[0], sc[1]), true)
	}
	allowed("reader configures", front2.Configure("user", "u2"), false)
	allowed("own agent", a1.Scope("agent", "a1", true), true)
	allowed("other agent", a1.Scope("agent", "a2", false), false)
	allowed("own user scope", a1.Scope("user", "u1", true), true)
	allowed("other user scope", a1.Scope("user", "u2", false), false)
	allowed("global read", front2.Scope("global", "global", false), true)
	allowed("global write by reader", front2.Scope("global", "global", true), false)
	allowed("member workflow", a1.Scope("workflow", "w1", true), true)
	allowed("non-member workflow", a1.Scope("workflow", "w2", false), false)
	allowed("member app read", a1.Scope("app", "shop", false), true)
	allowed("member app write", a1.Scope("app", "shop", true), false)
	allowed("admin app write", ops.Scope("app", "shop", true), true)
	allowed("list own user", a1.ListSessions("u1", ""), true)
	allowed("list other agent", a1.ListSessions("", "a2"), false)
	allowed("list all", a1.ListSessions("", ""), false)
	allowed("admin list all", ops.ListSessions("", ""), true)
	allowed("own data", a1.Data("d", "a1"), true)
	allowed("other's data", a1.Data("d", "a2"), false)
	allowed("unowned data", a1.Data("d", ""), false)
	allowed("single-user node", anyone.Scope("app", "x", true), true)
	allowed("own agent type read", a1.Scope("agent_type", "database-specialist", false), true)
	allowed("own agent type write", a1.Scope("agent_type", "database-specialist", true), true)
	allowed("other agent type", a1.Scope("agent_type", "support-specialist", false), false)
	allowed("no agent type", front2.Scope("agent_type", "database-specialist", false), false)
	allowed("create of own agent type", a1.CreateSession("u1", "a1", "", "", "database-specialist"), true)
	allowed("create claiming another agent type", a1.CreateSession("u1", "a1", "", "", "support-specialist"), false)
	allowed("admin creates of any agent type", ops.CreateSession("u1", "", "", "", "support-specialist"), true)
	if got := a1.Limits; got.MaxConcurrentQueries != 16 || got.MaxWatches != 4 || got.MaxSessions != 1000 {
		t.Errorf("example limits not applied: %+v", got)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ json, field string }{
		{`{"principals":[]}`, "node_account"},
		{`{"node_account":"MEM","principals":[{"name":"a b","account":"A","role":"writer"}]}`, "principals[0].name"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"MEM","role":"writer"}]}`, "principals[0].account"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"A","role":"owner"}]}`, "principals[0].role"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"A","role":"writer","scopes":["team:x"]}]}`, "principals[0].scopes[0]"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"A","role":"writer"},{"name":"b","account":"A","role":"reader"}]}`, "principals[1]"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"A","role":"writer","agent_type":"db:x"}]}`, "principals[0].agent_type"},
		{`{"node_account":"MEM","principals":[],"limit":{}}`, "unknown field"},
		{`{"node_account":"MEM","limits":{"max_watches":-1},"principals":[]}`, "limits"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"A","user":"u","role":"writer"}],"http_tokens":[{"sha256":"abc","account":"A","user":"u"}]}`, "http_tokens[0].sha256"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"A","user":"u","role":"writer"}],"http_tokens":[{"sha256":"` + strings.Repeat("a", 64) + `","account":"A","user":"v"}]}`, "http_tokens[0]"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"A","user":"u","role":"writer"}],"http_tokens":[{"sha256":"` + strings.Repeat("a", 64) + `","account":"MEM"}]}`, "http_tokens[0].account"},
		{`{"node_account":"MEM","principals":[{"name":"a","account":"A","user":"u","role":"writer"}],"http_tokens":[{"sha256":"` + strings.Repeat("a", 64) + `","account":"A","user":"u"},{"sha256":"` + strings.Repeat("a", 64) + `","account":"A","user":"u"}]}`, "http_tokens[1].sha256"},
	} {
		path := filepath.Join(t.TempDir(), "t.json")
		if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want ErrInvalidConfig naming %s", tc.json, err, tc.field)
		}
	}
}

// TestTokenCaller: a token of the file stands for its NATS identity's
// principal, and a forwarded request carries an identity another node maps
// to the same principal; any other token is unknown.
func TestTokenCaller(t *testing.T) {
	d := example(t)
	for token, want := range map[string]string{"a1-http-token": "a1", "ops-http-token": "ops", "front-u2-http-token": "front-u2"} {
		c, ok, err := d.TokenCaller(token)
		if !ok || err != nil || c.Principal != want {
			t.Fatalf("%s: %v %v %v, want %s", token, c, ok, err, want)
		}
		info, ok := d.ForwardInfo(c)
		if !ok {
			t.Fatalf("%s: no forward identity", token)
		}
		if again, err := d.Identify(hdr(info)); err != nil || again != c {
			t.Errorf("%s: forwarded as %s, identified as %v %v", token, info, again, err)
		}
	}
	for _, token := range []string{"", "a1-http-token ", "A1-HTTP-TOKEN", "d92746ae8ebb3626867f4c62b26d72f421afa507888017c2818cb5d36d747f9c"} {
		if _, ok, _ := d.TokenCaller(token); ok {
			t.Errorf("%q: accepted", token)
		}
	}
	if _, ok := d.ForwardInfo(Unrestricted(DefaultLimits())); ok {
		t.Error("the unrestricted caller has a forward identity")
	}
}

// FuzzIdentify: any header value is either a principal of the directory or
// a DeniedError, never a panic and never another error.
func FuzzIdentify(f *testing.F) {
	for _, s := range []string{`{"acc":"a1","user":"agent-a1"}`, `{"acc":"MEM"}`, `{}`, `null`, `[`, `{"acc":1}`} {
		f.Add(s)
	}
	d, err := Load("../examples/auth/tenants.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		c, err := d.Identify(hdr(v))
		var de *DeniedError
		switch {
		case err == nil && (c == nil || c.Principal == ""):
			t.Fatalf("identified an empty principal from %q", v)
		case err != nil && !errors.As(err, &de):
			t.Fatalf("%q: %v is not a DeniedError", v, err)
		}
	})
}
