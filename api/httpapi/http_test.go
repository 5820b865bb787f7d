package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/dispatch"
	"github.com/agentmem/agentmem/tenancy"
)

// fakeService serves nothing: the tests below are refused before any
// operation runs.
type fakeService struct{}

func (fakeService) Do(context.Context, string, []byte, *tenancy.Caller) (dispatch.Reply, error) {
	panic("an operation ran")
}
func (fakeService) Operations() []api.Operation { return nil }
func (fakeService) Tenants() *tenancy.Directory { return nil }
func (fakeService) Denied(string)               {}
func (fakeService) Stopping() <-chan struct{}   { return nil }
func (fakeService) Version() string             { return "test" }

// TestHTTPSingleUserServesLoopbackOnly: without tenants the HTTP API
// refuses a client that is not on loopback, a Host that is not a loopback
// name (DNS rebinding) and a foreign Origin, before any operation runs.
func TestHTTPSingleUserServesLoopbackOnly(t *testing.T) {
	h := New(fakeService{}, Config{})
	for _, c := range []struct {
		name, remote, host, origin string
		code                       int
		field                      string
	}{
		{"remote client", "192.0.2.7:5000", "127.0.0.1:9090", "", 403, "identity"},
		{"remote IPv6 client", "[2001:db8::1]:5000", "localhost:9090", "", 403, "identity"},
		{"rebound host name", "127.0.0.1:5000", "evil.example:9090", "", 403, "host"},
		{"foreign origin", "127.0.0.1:5000", "127.0.0.1:9090", "https://evil.example", 403, "origin"},
		{"origin with a path", "127.0.0.1:5000", "127.0.0.1:9090", "http://127.0.0.1:9090/x", 403, "origin"},
		{"no path segment", "127.0.0.1:5000", "127.0.0.1:9090", "http://127.0.0.1:9090", 400, "path"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/session/a.b/append", strings.NewReader(`{}`))
		r.RemoteAddr, r.Host = c.remote, c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var e struct {
			Code  int    `json:"code"`
			Field string `json:"field"`
		}
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != c.code || e.Field != c.field || e.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, w.Code, w.Body, c.code, c.field)
		}
	}
}

func TestHTTPSubjectOf(t *testing.T) {
	for in, want := range map[string]string{
		"session/s1/append":   "mem.v1.session.s1.append",
		"scope/user/u1/get":   "mem.v1.scope.user.u1.get",
		"data/put":            "mem.v1.data.put",
		"session/s1/apend":    "mem.v1.session.s1.apend",
		"session/s 1/append":  "",
		"session/s1/append/":  "",
		"session/>/append":    "",
		"session/s1.x/append": "",
		"":                    "",
	} {
		got, err := subjectOf(in)
		if (want == "") != (err != nil) || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
}
