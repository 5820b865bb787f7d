package node_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestNamespaceImportMessages: alice's export with her sessions' messages
// imported into bob's namespace re-creates her two sessions as bob's
// (s1-bob, s2-bob) holding her messages in order, with their ids, tool
// calls and the times they were said; a dry run reports it and creates
// nothing; the same import again appends nothing; a later export appends
// only the new messages; into alice's own namespace it appends nothing; a
// session of the target holding other messages is refused.
func TestNamespaceImportMessages(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	said := time.Date(2023, 5, 8, 10, 0, 0, 0, time.UTC).UnixNano()
	for _, s := range []string{"s1", "s2"} {
		if _, err := c.CreateSession(ctx, s, &memoryv1.CreateSessionRequest{UserId: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AppendMessages(ctx, "s1",
		&memoryv1.MessageInput{Id: "u-1", Role: memoryv1.Role_ROLE_USER, Content: "which queries are slow?", SaidUnixNano: said},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "pg_stat", Arguments: "{}"}}},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "c1", Content: "q1 12s"},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "q1 takes 12 seconds"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "s2", userMsg("my sister is called Ana")); err != nil {
		t.Fatal(err)
	}
	export := func() *replay.NamespaceFile {
		t.Helper()
		var buf bytes.Buffer
		if _, err := replay.NamespaceExport(ctx, c, client.User("alice"), "", true, c.LastWriteSeq(), &buf); err != nil {
			t.Fatal(err)
		}
		f, _, err := replay.ReadNamespaceFile(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := export()
	bob := client.User("bob")
	dry, err := replay.NamespaceImportMessages(ctx, c, f.Scope, bob, f.Sessions, true)
	if err != nil || dry != (replay.MessagesImport{Sessions: 2, Created: 2, Appended: 5}) {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if _, err := c.Get(ctx, "s1-bob"); client.Code(err) != 404 {
		t.Fatalf("the dry run created s1-bob: %v", err)
	}
	imp, err := replay.NamespaceImportMessages(ctx, c, f.Scope, bob, f.Sessions, false)
	if err != nil || imp != (replay.MessagesImport{Sessions: 2, Created: 2, Appended: 5}) {
		t.Fatalf("import: %+v, %v", imp, err)
	}
	messages := func(id string) []*memoryv1.Message {
		t.Helper()
		info, err := c.Get(ctx, id)
		if err != nil || info.GetUserId() != "bob" {
			t.Fatalf("%s: %v, %v, want bob's", id, info, err)
		}
		r, err := c.Recall(ctx, id, &memoryv1.RecallRequest{Limit: 50, MinSeq: info.GetSeq()})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetMessages()
	}
	got := messages("s1-bob")
	var roles []string
	for _, m := range got {
		roles = append(roles, strings.TrimPrefix(m.GetRole().String(), "ROLE_")+":"+m.GetContent()+m.GetToolCallId())
	}
	if strings.Join(roles, "|") != "USER:which queries are slow?|ASSISTANT:|TOOL:q1 12sc1|ASSISTANT:q1 takes 12 seconds" {
		t.Fatalf("s1-bob's messages: %s", strings.Join(roles, "|"))
	}
	if got[0].GetId() != "u-1" || got[0].GetSaidUnixNano() != said || got[1].GetToolCalls()[0].GetName() != "pg_stat" {
		t.Fatalf("s1-bob's first messages: %v", got[:2])
	}
	if m := messages("s2-bob"); len(m) != 1 || m[0].GetContent() != "my sister is called Ana" || m[0].GetSaidUnixNano() == 0 {
		t.Fatalf("s2-bob's messages: %v", m)
	}
	again, err := replay.NamespaceImportMessages(ctx, c, f.Scope, bob, f.Sessions, false)
	if err != nil || again != (replay.MessagesImport{Sessions: 2, Appended: 0, Present: 5}) {
		t.Fatalf("the same import again: %+v, %v", again, err)
	}
	// Alice goes on in s2: the next import appends that message only.
	if _, err := c.AppendMessages(ctx, "s2", userMsg("and my brother Leo")); err != nil {
		t.Fatal(err)
	}
	f = export()
	next, err := replay.NamespaceImportMessages(ctx, c, f.Scope, bob, f.Sessions, false)
	if err != nil || next != (replay.MessagesImport{Sessions: 2, Appended: 1, Present: 5}) {
		t.Fatalf("a later export: %+v, %v", next, err)
	}
	if m := messages("s2-bob"); len(m) != 2 || m[1].GetContent() != "and my brother Leo" {
		t.Fatalf("s2-bob after the later import: %v", m)
	}
	self, err := replay.NamespaceImportMessages(ctx, c, f.Scope, client.User("alice"), f.Sessions, false)
	if err != nil || self != (replay.MessagesImport{Sessions: 2, Present: 6}) {
		t.Fatalf("into alice's own namespace: %+v, %v", self, err)
	}
	// A target session holding other messages is not written.
	if _, err := c.CreateSession(ctx, "s1-carol", &memoryv1.CreateSessionRequest{UserId: "carol"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "s1-carol", userMsg("carol's own words")); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.NamespaceImportMessages(ctx, c, f.Scope, client.User("carol"), f.Sessions, false); err == nil || !strings.Contains(err.Error(), "other messages") {
		t.Fatalf("import over a session holding other messages: %v", err)
	}
	if _, err := replay.NamespaceImportMessages(ctx, c, f.Scope, client.Project("p1"), f.Sessions, false); replay.ExitCode(err) != 2 {
		t.Fatalf("messages into a project namespace: %v, want a usage error", err)
	}
}
