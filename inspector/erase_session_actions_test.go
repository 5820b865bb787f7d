package inspector_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/inspector"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// TestSessionEraseAction: the session's pages offer "Erase this session"
// to a viewer who may erase it; its form (a reason, the session's id typed
// again to confirm, the CSRF token) posts the API's session erase on the
// viewer's connection. Without the token, with a wrong one, or without the
// confirmation, nothing is erased; with them the receipt shows, and the
// session's page says it was erased. A viewer the API would not let erase
// the session is offered no form and refused one posted anyway.
func TestSessionEraseAction(t *testing.T) {
	u := startNode(t, nil)
	ctx := context.Background()
	u.session(t, "s1", "u1", "a1", 2)
	u.session(t, "s2", "u1", "a1", 1)

	for _, path := range []string{"/ui/s/s1", "/ui/s/s1/timeline", "/ui/s/s1/conversation", "/ui/s/s1/compare"} {
		if body, _ := page(t, u, path); !strings.Contains(body, `href="/ui/s/s1/erase"`) {
			t.Errorf("%s offers no erase:\n%.2000s", path, body)
		}
	}
	body, cookie := page(t, u, "/ui/s/s1/erase")
	m := csrfRe.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, `action="/ui/act/erase-session"`) || !strings.Contains(body, `name="reason"`) ||
		!strings.Contains(body, `name="confirm"`) || !strings.Contains(body, `id="erasesession"`) {
		t.Fatalf("no erase form:\n%s", body)
	}
	token := m[1]
	form := func(token, confirm string) url.Values {
		f := url.Values{"session": {"s1"}, "reason": {"user asked to be forgotten"}, "confirm": {confirm}}
		if token != "" {
			f.Set("csrf", token)
		}
		return f
	}
	for name, c := range map[string]struct {
		form   url.Values
		cookie *http.Cookie
		code   int
		says   string
	}{
		"no token":        {form("", "s1"), cookie, 403, "CSRF token is missing or wrong"},
		"wrong token":     {form(token[:len(token)-2]+"xx", "s1"), cookie, 403, "CSRF token is missing or wrong"},
		"no cookie":       {form(token, "s1"), nil, 403, "CSRF token is missing or wrong"},
		"no confirmation": {form(token, ""), cookie, 400, "confirm"},
		"wrong session":   {form(token, "s2"), cookie, 400, "confirm"},
	} {
		code, b := post(t, u, "/ui/act/erase-session", c.form, c.cookie)
		if code != c.code || !strings.Contains(b, c.says) || !strings.Contains(b, `id="error"`) {
			t.Errorf("%s: %d, want %d %q:\n%.600s", name, code, c.code, c.says, b)
		}
	}
	if _, err := u.c.Get(ctx, "s1"); err != nil {
		t.Fatalf("a refused POST erased s1: %v", err)
	}

	code, b := post(t, u, "/ui/act/erase-session", form(token, "s1"), cookie)
	if code != 200 || !strings.Contains(b, `id="receipt"`) || !strings.Contains(b, "session:s1") || !strings.Contains(b, `href="/ui/s/s1"`) {
		t.Fatalf("erase: %d\n%s", code, b)
	}
	if _, err := u.c.Get(ctx, "s1"); client.Code(err) != 404 {
		t.Errorf("the erased session still reads: %v", err)
	}
	code, b = get(t, u.base, "/ui/s/s1", nil, "", "")
	if code != 404 || !strings.Contains(b, `id="erased"`) || !strings.Contains(b, "user asked to be forgotten") {
		t.Errorf("the session page after the erase: %d\n%.1500s", code, b)
	}
	if code, _ = post(t, u, "/ui/act/erase-session", form(token, "s1"), cookie); code != 404 {
		t.Errorf("erasing it again: %d, want 404", code)
	}

	// A viewer that may not change the session: no link, no form, a 403
	// for a form posted anyway, and s2 stays.
	inspector.SetLocalCaller(u.n.Inspector(), &tenancy.Caller{Principal: "ro", Users: []string{"u1"}, Role: tenancy.RoleReader})
	body, cookie = page(t, u, "/ui/s/s2")
	if strings.Contains(body, "/erase") {
		t.Errorf("a reader is offered the erase:\n%.2000s", body)
	}
	if code, b = get(t, u.base, "/ui/s/s2/erase", nil, "", ""); code != 403 || strings.Contains(b, `method="post"`) {
		t.Errorf("a reader's erase form: %d\n%.600s", code, b)
	}
	f := url.Values{"csrf": {cookie.Value}, "session": {"s2"}, "confirm": {"s2"}}
	if code, b = post(t, u, "/ui/act/erase-session", f, cookie); code != 403 || !strings.Contains(b, "may not erase session s2") {
		t.Errorf("a reader's erase: %d\n%.600s", code, b)
	}
	if _, err := u.c.Get(ctx, "s2"); err != nil {
		t.Errorf("a refused erase erased s2: %v", err)
	}
}

// TestSessionEraseActionTenant: on a tenant node the erase runs on the
// admin's own connection, so the removal ledger names the admin as who
// asked it, and the erased session's page says so.
func TestSessionEraseActionTenant(t *testing.T) {
	u := startNode(t, tenantConfig)
	ctx := context.Background()
	nc, err := nats.Connect(u.n.ClientURL(), nats.UserInfo("agent-a1", "a1-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := client.New(nc).CreateSession(ctx, "t1", &memoryv1.CreateSessionRequest{UserId: "u1", AgentId: "a1"}); err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, form url.Values, cookie *http.Cookie) (int, string, []*http.Cookie) {
		req, err := http.NewRequest(method, u.base+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("ops", "ops-secret")
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if cookie != nil {
			req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Cookies()
	}
	code, body, cookies := do(http.MethodGet, "/ui/s/t1/erase", nil, nil)
	m := csrfRe.FindStringSubmatch(body)
	if code != 200 || m == nil || len(cookies) == 0 {
		t.Fatalf("the admin's erase form: %d\n%s", code, body)
	}
	f := url.Values{"csrf": {m[1]}, "session": {"t1"}, "confirm": {"t1"}, "reason": {"ticket 42"}}
	if code, body, _ = do(http.MethodPost, "/ui/act/erase-session", f, cookies[0]); code != 200 || !strings.Contains(body, `id="receipt"`) {
		t.Fatalf("the admin's erase: %d\n%s", code, body)
	}
	code, body, _ = do(http.MethodGet, "/ui/s/t1", nil, nil)
	if code != 404 || !strings.Contains(body, `<b class="by">ops</b>`) || !strings.Contains(body, "ticket 42") {
		t.Errorf("the erased page does not name the admin ops as who asked: %d\n%.1500s", code, body)
	}
}
