package inspector_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestScopesDirectory: /ui/scopes lists the scopes the log holds with
// their live entries, filterable by kind and id, each linking its page;
// its search asks the API's scope search of the listed scopes, and a
// scope page searches its own scope. An erased scope leaves the list.
func TestScopesDirectory(t *testing.T) {
	u := startNode(t, nil)
	ctx := context.Background()
	put := func(s client.Scope, key, value string) {
		t.Helper()
		if _, err := u.c.Put(ctx, s, &memoryv1.PutEntryRequest{Key: key, Value: []byte(value)}); err != nil {
			t.Fatal(err)
		}
	}
	put(client.Workflow("release"), "step/1", "tag the release candidate")
	put(client.Workflow("release"), "step/2", "publish the changelog")
	put(client.Project("atlas"), "owner", "the maps team owns atlas")
	put(client.User("ann"), "pref/tea", "prefers green tea")
	put(client.Workflow("gone"), "x", "to be erased")
	if _, err := u.c.DeleteEntry(ctx, client.Workflow("release"), &memoryv1.DeleteEntryRequest{Key: "step/2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.c.EraseScope(ctx, client.Workflow("gone"), "test"); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, u.base, "/ui/scopes", nil, "", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	rows := body[strings.Index(body, `id="scopes"`):]
	for _, want := range []string{`data-scope="workflow:release"`, `href="/ui/scopes?kind=workflow&id=release"`, `data-scope="project:atlas"`, `data-scope="user:ann"`} {
		if !strings.Contains(rows, want) {
			t.Errorf("the directory lacks %s:\n%s", want, rows)
		}
	}
	if strings.Contains(rows, "workflow:gone") {
		t.Errorf("an erased scope is listed")
	}
	release := rows[strings.Index(rows, `data-scope="workflow:release"`):]
	release, _, _ = strings.Cut(release, "</tr>")
	if !strings.Contains(release, `<td class="num">1</td>`) {
		t.Errorf("workflow:release has 1 live entry (one deleted): %s", release)
	}
	// Filters.
	_, body = get(t, u.base, "/ui/scopes?kind=workflow", nil, "", "")
	if !strings.Contains(body, "workflow:release") || strings.Contains(body, `data-scope="project:atlas"`) {
		t.Errorf("kind=workflow lists other kinds or not release")
	}
	_, body = get(t, u.base, "/ui/scopes?match=ATL", nil, "", "")
	if !strings.Contains(body, `data-scope="project:atlas"`) || strings.Contains(body, `data-scope="workflow:release"`) {
		t.Errorf("match=ATL: not atlas alone")
	}
	// Search across the listed scopes, then within one.
	_, body = get(t, u.base, "/ui/scopes?q=tea", nil, "", "")
	if !strings.Contains(body, `id="dirhits"`) || !strings.Contains(body, `data-scope="user:ann" data-key="pref/tea"`) || strings.Contains(body, `data-key="owner"`) {
		t.Errorf("search tea across scopes:\n%s", body)
	}
	_, body = get(t, u.base, "/ui/scopes?kind=project&id=atlas&q=maps", nil, "", "")
	if !strings.Contains(body, `id="scopehits"`) || !strings.Contains(body, `data-key="owner"`) {
		t.Errorf("search maps in project:atlas:\n%s", body)
	}
	// Bad input names its field.
	if code, body = get(t, u.base, "/ui/scopes?kind=nope", nil, "", ""); code != http.StatusBadRequest || !strings.Contains(body, "kind: want one of") {
		t.Errorf("kind=nope: %d %.300s", code, body)
	}
}

// TestScopeBookkeepingApart: consolidation's bookkeeping keys
// (consolidated/…, review/…) are listed apart from the facts, in a
// collapsed section; a source message link leads to the message in its
// conversation.
func TestScopeBookkeepingApart(t *testing.T) {
	u := startNode(t, nil)
	ctx := context.Background()
	rep := u.converse(t, "s1", "u1", "I live in Oslo.", "Cool.")
	if len(rep.GetFacts()) != 1 {
		t.Fatalf("facts: %v", rep.GetFacts())
	}
	if _, err := u.c.Put(ctx, client.User("u1"), &memoryv1.PutEntryRequest{Key: "review/fact/x", Value: []byte("pending value")}); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, u.base, "/ui/scopes?kind=user&id=u1", nil, "", "")
	entries, _, _ := strings.Cut(body[strings.Index(body, `id="entries"`):], "</table>")
	internal, _, _ := strings.Cut(body[strings.Index(body, `id="internal"`):], "</details>")
	if !strings.Contains(entries, `data-key="fact/user/home_city"`) {
		t.Errorf("the fact is not among the entries:\n%s", entries)
	}
	for _, k := range []string{"consolidated/s1", "review/fact/x"} {
		if strings.Contains(entries, `data-key="`+k+`"`) || !strings.Contains(internal, `data-key="`+k+`"`) {
			t.Errorf("%s is not apart, in the bookkeeping section", k)
		}
	}
	if !strings.HasPrefix(internal, `id="internal">`) {
		t.Errorf("the bookkeeping section is open: %.80s", internal)
	}
	// The source message link.
	e, err := u.c.GetEntry(ctx, client.User("u1"), "fact/user/home_city", 0)
	if err != nil {
		t.Fatal(err)
	}
	mid := strings.Split(e.GetMetadata()["source_messages"], ",")[0]
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(u.base + "/ui/s/s1/m/" + mid)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/s/s1/conversation?n=") {
		t.Fatalf("source message: %d %q", res.StatusCode, loc)
	}
	_, anchor, _ := strings.Cut(loc, "#")
	_, body = get(t, u.base, loc, nil, "", "")
	if !strings.Contains(body, `id="`+anchor+`" data-n="`+strings.TrimPrefix(anchor, "m")+`" data-id="`+mid+`"`) {
		t.Errorf("the conversation at %s has no anchor %s for message %s", loc, anchor, mid)
	}
	if code, _ := get(t, u.base, "/ui/s/s1/m/no-such-message", nil, "", ""); code != 404 {
		t.Errorf("an unknown message: %d, want 404", code)
	}
}
