package inspector_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAccessSingleUser: the single-user node serves loopback clients only,
// checks Host and Origin, answers pages to GET only (its admin forms post
// to /ui/act/, TestScopesAdminActions) and takes no secret in a URL.
func TestAccessSingleUser(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 1)
	for _, c := range []struct {
		name string
		path string
		hdr  map[string]string
		want int
	}{
		{"loopback", "/ui/", nil, 200},
		{"localhost host", "/ui/", map[string]string{"Host": "localhost"}, 200},
		{"foreign host (DNS rebinding)", "/ui/", map[string]string{"Host": "evil.example:9090"}, 403},
		{"own origin", "/ui/s/s1", map[string]string{"Origin": u.base}, 200},
		{"foreign origin", "/ui/s/s1", map[string]string{"Origin": "http://evil.example"}, 403},
		{"cross-site fetch", "/ui/", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"password in URL", "/ui/?password=x", nil, 400},
		{"bad session id", "/ui/s/a.b", nil, 400},
		{"unknown session", "/ui/s/nobody", nil, 404},
		{"bad status filter", "/ui/?status=sleeping", nil, 400},
		{"bad seq", "/ui/s/s1/timeline?seq=x", nil, 400},
		{"before the session", "/ui/s/s1/at.json?seq=1", nil, 200}, // seq 1 is its creation
	} {
		if code, body := get(t, u.base, c.path, c.hdr, "", ""); code != c.want {
			t.Errorf("%s: GET %s: %d, want %d: %.200s", c.name, c.path, code, c.want, body)
		}
	}
	res, err := http.Post(u.base+"/ui/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", res.StatusCode)
	}
	// A remote client (the handler as the listener would call it).
	for _, remote := range []string{"192.0.2.7:40000", "[2001:db8::1]:40000"} {
		req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
		req.RemoteAddr, req.Host = remote, "127.0.0.1:9090"
		w := httptest.NewRecorder()
		u.n.Inspector().ServeHTTP(w, req)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "loopback") {
			t.Errorf("remote %s: %d %q, want 403 loopback only", remote, w.Code, w.Body.String())
		}
	}
}

// TestAccessTenants: with tenants, the inspector asks for NATS credentials
// (401), verifies them with the NATS server, and serves admins only (403
// for a writer, a reader and an agent), from any address.
func TestAccessTenants(t *testing.T) {
	u := startNode(t, tenantConfig)
	for _, c := range []struct {
		user, pass string
		want       int
	}{
		{"", "", 401},
		{"ops", "wrong", 401},
		{"nobody", "x", 401},
		{"agent-a1", "a1-secret", 403},
		{"front-u1", "u1-secret", 403},
		{"front-u2", "u2-secret", 403},
		{"ops", "ops-secret", 200},
	} {
		code, body := get(t, u.base, "/ui/", nil, c.user, c.pass)
		if code != c.want {
			t.Errorf("%q: %d, want %d: %.300s", c.user, code, c.want, body)
		}
	}
	// The admin from another address too; Host is still checked.
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.RemoteAddr, req.Host = "192.0.2.7:40000", "127.0.0.1:9090"
	req.SetBasicAuth("ops", "ops-secret")
	w := httptest.NewRecorder()
	u.n.Inspector().ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Errorf("admin from a remote address: %d %.300s", w.Code, w.Body.String())
	}
	req.Host = "evil.example"
	w = httptest.NewRecorder()
	u.n.Inspector().ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Errorf("admin with a foreign Host: %d, want 403", w.Code)
	}
}

// TestErasedSessionGone: once a session is erased, no page of the
// inspector shows it: not its context, its timeline, its time travel, its
// search, nor the list.
func TestErasedSessionGone(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "gone", "u1", "a1", 3)
	u.session(t, "kept", "u1", "a1", 1)
	if code, body := get(t, u.base, "/ui/s/gone/at.json?seq=2", nil, "", ""); code != 200 || !strings.Contains(body, "arrived damaged") {
		t.Fatalf("before the erasure: %d %.200s", code, body)
	}
	if _, err := u.c.EraseSession(context.Background(), "gone", "test"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/ui/s/gone", "/ui/s/gone/timeline", "/ui/s/gone/timeline?seq=2", "/ui/s/gone/at.json?seq=2", "/ui/s/gone/search?q=kettle"} {
		code, body := get(t, u.base, p, nil, "", "")
		if code == 200 || strings.Contains(body, "arrived damaged") {
			t.Errorf("GET %s after the erasure: %d %.300s", p, code, body)
		}
	}
	if _, body := get(t, u.base, "/ui/", nil, "", ""); strings.Contains(body, `data-session="gone"`) || !strings.Contains(body, `data-session="kept"`) {
		t.Errorf("list after the erasure: %.500s", body)
	}
}
