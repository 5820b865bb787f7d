package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func fill(t *testing.T, c *client.Client, id, user string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, SystemPrompt: "sys", MaxContextTokens: 1000, ReservedOutputTokens: 100}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		role := memoryv1.Role_ROLE_USER
		if i%2 == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		text := fmt.Sprintf("%s turn %d about the weather and lunch plans %s", id, i, strings.Repeat("filler ", 15))
		if i == 3 {
			text = "the customer-id lookup failed with error: 3706 for O'Brien"
		}
		if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Id: fmt.Sprintf("%s-m%d", id, i), Role: role, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecallSearchPromote drives the projection-backed endpoints through a
// node: every query passes the client's last write sequence (read your writes).
func TestRecallSearchPromote(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	fill(t, c, "q1", "alice", 30)
	fill(t, c, "q2", "alice", 6)
	fill(t, c, "q3", "bob", 6)

	rec, err := c.Recall(ctx, "q1", &memoryv1.RecallRequest{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if rec.GetTotal() != 30 || len(rec.GetMessages()) != 30 {
		t.Fatalf("recall: total %d, %d messages", rec.GetTotal(), len(rec.GetMessages()))
	}
	for i, m := range rec.GetMessages() {
		if m.GetId() != fmt.Sprintf("q1-m%d", i) || m.GetTokens() == 0 {
			t.Fatalf("recall[%d] = %s (%d tokens)", i, m.GetId(), m.GetTokens())
		}
	}
	page, err := c.Recall(ctx, "q1", &memoryv1.RecallRequest{Offset: 28, Limit: 5})
	if err != nil || len(page.GetMessages()) != 2 || page.GetMessages()[0].GetId() != "q1-m28" {
		t.Fatalf("recall page: %v %v", page, err)
	}
	if _, err := c.Recall(ctx, "q1", &memoryv1.RecallRequest{Limit: 51}); client.Code(err) != 400 {
		t.Fatalf("limit 51: %v", err)
	}
	if _, err := c.Recall(ctx, "nobody", &memoryv1.RecallRequest{}); client.Code(err) != 404 {
		t.Fatalf("recall unknown session: %v", err)
	}

	hits, err := c.Search(ctx, "q1", &memoryv1.SearchRequest{Query: "error 3706"})
	if err != nil || len(hits.GetHits()) == 0 || hits.GetHits()[0].GetMessage().GetId() != "q1-m3" {
		t.Fatalf("search: %v %v", hits, err)
	}
	user, err := c.Search(ctx, "q1", &memoryv1.SearchRequest{Query: "customer-id", Scope: memoryv1.SearchScope_SEARCH_SCOPE_USER, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string]bool{}
	for _, h := range user.GetHits() {
		sessions[h.GetSessionId()] = true
	}
	if !sessions["q1"] || !sessions["q2"] || sessions["q3"] {
		t.Fatalf("user-scope search found sessions %v, want q1 and q2 (alice), not q3 (bob)", sessions)
	}
	for _, q := range []string{"customer-id error", "O'Brien", "error: 3706", "what broke?", `"unbalanced`, "*", "AND OR NOT", "🔥", "数据库错误", ""} {
		if _, err := c.Search(ctx, "q1", &memoryv1.SearchRequest{Query: q}); err != nil {
			t.Errorf("search %q: %v", q, err)
		}
	}

	// q1-m0 was compressed out of L1 long ago: promote it back.
	cx, _ := c.Context(ctx, "q1")
	for _, m := range cx.GetMessages() {
		if m.GetId() == "q1-m0" {
			t.Fatal("q1-m0 is still in the context; the test needs it compressed away")
		}
	}
	pr, err := c.Promote(ctx, "q1", "q1-m0", "q1-m3")
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetPromotedTokens() == 0 || pr.GetUsage().GetUsed() > pr.GetUsage().GetBudget() {
		t.Fatalf("promote: %v", pr)
	}
	cx, _ = c.Context(ctx, "q1")
	promoted := 0
	for _, m := range cx.GetMessages() {
		if m.GetLayer() == "promoted" {
			promoted++
		}
	}
	if promoted != 2 || cx.GetLayers().GetPromoted() != pr.GetPromotedTokens() {
		t.Fatalf("context has %d promoted messages (%d tokens), want 2 (%d)", promoted, cx.GetLayers().GetPromoted(), pr.GetPromotedTokens())
	}
	if _, err := c.Promote(ctx, "q1", "q2-m0"); client.Code(err) != 404 {
		t.Fatalf("promoting another session's message: %v, want 404", err)
	}
	// A promotion makes room by compressing L1 (the context may be full),
	// but one larger than the budget cannot fit: 413, saying what is free.
	fill(t, c, "q4", "carol", 80)
	big := make([]string, 0, 50)
	for i := range 50 {
		big = append(big, fmt.Sprintf("q4-m%d", i))
	}
	if _, err := c.Promote(ctx, "q4", big...); client.Code(err) != 413 || !strings.Contains(err.Error(), "free") {
		t.Fatalf("promotion over budget: %v, want 413 saying what is free", err)
	}
	if _, err := c.ClearRecalled(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	cx, _ = c.Context(ctx, "q1")
	if cx.GetLayers().GetPromoted() != 0 {
		t.Fatal("clear_recalled left promoted tokens")
	}

	list, err := c.ListSessions(ctx, &memoryv1.ListSessionsRequest{UserId: "alice"})
	if err != nil || len(list.GetSessions()) != 2 {
		t.Fatalf("list alice: %v %v", list, err)
	}
	// A min_seq past the log's last sequence is no write's: 400 at once
	// (a stored one the projection has not applied yet is 503 after the
	// wait: node.TestStreamDeletedUnderNode).
	if _, err := c.Recall(ctx, "q1", &memoryv1.RecallRequest{MinSeq: 1 << 40}); client.Code(err) != 400 || !strings.Contains(err.Error(), "min_seq") {
		t.Fatalf("min_seq past the log: %v, want 400 min_seq", err)
	}
}
