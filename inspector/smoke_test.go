package inspector_test

import (
	"strings"
	"testing"
)

func TestPagesServe(t *testing.T) {
	u := startNode(t, nil)
	u.session(t, "s1", "u1", "a1", 12)
	for _, p := range []string{"/ui/", "/ui/s/s1", "/ui/s/s1/timeline", "/ui/s/s1/timeline?seq=5", "/ui/s/s1/search?q=refund+kettle", "/ui/scopes?kind=global", "/ui/s/s1/at.json?seq=5", "/ui/static/app.css",
		"/ui/s/s1/conversation", "/ui/s/s1/conversation?n=1", "/ui/s/s1/message/1", "/ui/s/s1/at?seq=5", "/ui/s/s1/timeline/rows?after=0",
		"/ui/s/s1/timeline?kind=append&page=1", "/ui/?user=U&agent=A&sort=activity", "/ui/static/live-worker.js"} {
		code, body := get(t, u.base, p, nil, "", "")
		if code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
		if testing.Verbose() && strings.HasPrefix(p, "/ui/s/s1/timeline?") {
			t.Log(body[:min(len(body), 3000)])
		}
	}
}
