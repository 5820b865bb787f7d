package inspector_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestSharedScopesShown: a session's page links its agent type's scope,
// the scopes page lists that scope's entries, and the context names the
// pattern libraries its ROM was built with.
func TestSharedScopesShown(t *testing.T) {
	u := startNode(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := u.c.Put(ctx, client.AgentType("dba"), &memoryv1.PutEntryRequest{Key: "vacuum", Value: []byte("vacuum after bulk loads")}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.c.Put(ctx, client.Global(), &memoryv1.PutEntryRequest{Key: "patterns/sql/01", Value: []byte("Use bind parameters.")}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.c.SearchEntries(ctx, client.Global(), &memoryv1.SearchEntriesRequest{Query: "bind"}); err != nil {
		t.Fatal(err) // waits for the projection the libraries are read from
	}
	if _, err := u.c.CreateSession(ctx, "s-dba", &memoryv1.CreateSessionRequest{UserId: "u1", AgentType: "dba", PatternLibraries: []string{"sql"}, SystemPrompt: "You are a DBA."}); err != nil {
		t.Fatal(err)
	}
	u.appendTurns(t, "s-dba", 0, 1)
	for p, want := range map[string]string{
		"/ui/s/s-dba":                       "agent_type:dba",
		"/ui/scopes?kind=agent_type&id=dba": "vacuum after bulk loads",
	} {
		code, body := get(t, u.base, p, nil, "", "")
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want %q in:\n%s", p, code, want, body[:min(len(body), 2000)])
		}
	}
	code, body := get(t, u.base, "/ui/s/s-dba", nil, "", "")
	if code != 200 || !strings.Contains(body, "ROM version 1 · libraries sql@") {
		t.Errorf("the context does not name its ROM's libraries: %d\n%s", code, body[:min(len(body), 4000)])
	}
}
