package inspector_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/inspector"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// page GETs path and returns its body and the CSRF cookie it set.
func page(t *testing.T, u *uiNode, path string) (string, *http.Cookie) {
	t.Helper()
	res, err := http.Get(u.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", path, res.StatusCode, b)
	}
	for _, c := range res.Cookies() {
		if c.Name == "agentmem_ui_csrf" {
			return string(b), c
		}
	}
	t.Fatalf("GET %s set no CSRF cookie", path)
	return "", nil
}

// post submits form to path with the cookie (nil: none) and returns the
// status and the body.
func post(t *testing.T, u *uiNode, path string, form url.Values, cookie *http.Cookie) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestScopesAdminActions: a conflict settled, an entry edited (a new
// version, compare-and-set) and an entry erased from the scope page,
// each a POST form whose CSRF token (form and SameSite cookie) is
// checked: without it or with a wrong one, a 403 page and nothing done.
// A viewer the API would not let write the scope is offered no form and
// refused one posted anyway.
func TestScopesAdminActions(t *testing.T) {
	u := startNode(t, nil)
	ctx := context.Background()
	u1 := client.User("u1")
	if _, err := u.c.Configure(ctx, u1, &memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{ConflictStrategy: "review"}}); err != nil {
		t.Fatal(err)
	}
	u.converse(t, "s1", "u1", "I live in Oslo.", "Cool.")
	u.converse(t, "s2", "u1", "Big news: I moved to Bergen last week.", "Congrats!")
	const key = "fact/user/home_city"

	body, cookie := page(t, u, "/ui/scopes?kind=user&id=u1")
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/ui/" {
		t.Errorf("CSRF cookie %+v: want HttpOnly, SameSite=Strict, Path=/ui/", cookie)
	}
	m := csrfRe.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, `action="/ui/act/settle"`) {
		t.Fatalf("the conflict has no settle form:\n%s", body)
	}
	token := m[1]
	if token != cookie.Value {
		t.Errorf("form token %q, cookie %q", token, cookie.Value)
	}
	settle := url.Values{"kind": {"user"}, "id": {"u1"}, "key": {key}, "decision": {"accept"}}
	for name, c := range map[string]struct {
		token  string
		cookie *http.Cookie
	}{"no token": {"", cookie}, "wrong token": {token[:len(token)-2] + "xx", cookie}, "no cookie": {token, nil},
		"wrong cookie": {token, &http.Cookie{Name: cookie.Name, Value: "forged"}}} {
		f := url.Values{}
		for k, v := range settle {
			f[k] = v
		}
		if c.token != "" {
			f.Set("csrf", c.token)
		}
		code, b := post(t, u, "/ui/act/settle", f, c.cookie)
		if code != 403 || !strings.Contains(b, "CSRF token is missing or wrong") || !strings.Contains(b, `id="error"`) {
			t.Errorf("%s: %d, want the 403 page:\n%.600s", name, code, b)
		}
	}
	if cs, err := u.c.Conflicts(ctx, u1); err != nil || len(cs) != 1 {
		t.Fatalf("a refused POST settled the conflict: %v %v", cs, err)
	}
	settle.Set("csrf", token)
	req, _ := http.NewRequest(http.MethodPost, u.base+"/ui/act/settle", strings.NewReader(settle.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 403 {
		t.Fatalf("a cross-site POST with the token: %v %v, want 403", res, err)
	} else {
		res.Body.Close()
	}
	code, b := post(t, u, "/ui/act/settle", settle, cookie)
	if code != 200 || !strings.Contains(b, `id="newversion"`) || !strings.Contains(b, "Bergen") {
		t.Fatalf("settle: %d\n%s", code, b)
	}
	cur, err := u.c.GetEntry(ctx, u1, key, 0)
	if err != nil || !strings.Contains(string(cur.GetValue()), "Bergen") || !strings.Contains(b, `data-version="`+itoa(cur.GetVersion())+`"`) {
		t.Fatalf("after settle: %v %v; page:\n%s", cur, err, b)
	}

	// Edit: a new version from the one the form showed.
	body, _ = page(t, u, "/ui/scopes?kind=user&id=u1&key="+key)
	if !strings.Contains(body, `action="/ui/act/edit"`) || !strings.Contains(body, `name="version" value="`+itoa(cur.GetVersion())+`"`) {
		t.Fatalf("no edit form from v%d:\n%s", cur.GetVersion(), body)
	}
	edit := url.Values{"csrf": {token}, "kind": {"user"}, "id": {"u1"}, "key": {key}, "version": {itoa(cur.GetVersion())}, "value": {"Trondheim"}}
	if code, b = post(t, u, "/ui/act/edit", edit, cookie); code != 200 || !strings.Contains(b, `data-version="`+itoa(cur.GetVersion()+1)+`"`) {
		t.Fatalf("edit: %d\n%s", code, b)
	}
	edited, err := u.c.GetEntry(ctx, u1, key, 0)
	if err != nil || string(edited.GetValue()) != "Trondheim" || edited.GetMetadata()["agentmem.source_session"] == "" {
		t.Fatalf("after edit: %v %v", edited, err)
	}
	if code, b = post(t, u, "/ui/act/edit", edit, cookie); code != 409 {
		t.Errorf("an edit from a stale version: %d, want 409\n%.600s", code, b)
	}
	edit.Del("csrf")
	if code, _ = post(t, u, "/ui/act/edit", edit, cookie); code != 403 {
		t.Errorf("edit without a token: %d, want 403", code)
	}

	// Erase: the receipt, and the key is gone.
	erase := url.Values{"csrf": {token}, "kind": {"user"}, "id": {"u1"}, "key": {key}, "reason": {"test"}}
	if code, b = post(t, u, "/ui/act/erase", erase, cookie); code != 200 || !strings.Contains(b, `id="receipt"`) || !strings.Contains(b, key) {
		t.Fatalf("erase: %d\n%s", code, b)
	}
	if _, err := u.c.GetEntry(ctx, u1, key, 0); client.Code(err) != 404 {
		t.Errorf("the erased key still reads: %v", err)
	}

	// A viewer that may not write the scope: no form, and a form posted
	// anyway is refused.
	if _, err := u.c.Put(ctx, u1, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	inspector.SetLocalCaller(u.n.Inspector(), &tenancy.Caller{Principal: "ro", Users: []string{"u1"}, Role: tenancy.RoleReader})
	body, cookie = page(t, u, "/ui/scopes?kind=user&id=u1&key=k")
	if strings.Contains(body, `method="post"`) {
		t.Errorf("a reader is offered a form:\n%s", body)
	}
	token = cookie.Value // the page holds no form to take it from
	edit = url.Values{"csrf": {token}, "kind": {"user"}, "id": {"u1"}, "key": {"k"}, "version": {"1"}, "value": {"w"}}
	if code, b = post(t, u, "/ui/act/edit", edit, cookie); code != 403 || !strings.Contains(b, "may not edit entries in user:u1") {
		t.Errorf("a reader's edit: %d\n%.600s", code, b)
	}
	if code, _ = post(t, u, "/ui/act/erase", url.Values{"csrf": {token}, "kind": {"user"}, "id": {"u1"}, "key": {"k"}}, cookie); code != 403 {
		t.Errorf("a reader's erase: %d, want 403", code)
	}
	if e, err := u.c.GetEntry(ctx, u1, "k", 0); err != nil || string(e.GetValue()) != "v" {
		t.Errorf("a refused edit changed k: %v %v", e, err)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
