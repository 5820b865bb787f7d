package node_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// archiveFact appends a planted fact and filler until compression has
// archived the L2 summary covering the fact, and returns that summary as
// recall (kind "summaries") pages it.
func archiveFact(t *testing.T, ctx context.Context, n *node.Node, c *client.Client, id, fact string) *memoryv1.Summary {
	t.Helper()
	if _, err := c.AppendMessages(ctx, id, userMsg(fact), &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "Noted: " + fact}); err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		rep, err := c.AppendMessages(ctx, id, userMsg(fmt.Sprintf("Filler %d: what about lunch and the weather for the outing?", i)),
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("Filler answer %d: sandwiches, sun, a walk by the river.", i)})
		if err != nil {
			t.Fatal(err)
		}
		if i%25 != 24 {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = n.WaitProjected(wctx, rep.GetResult().GetSeq())
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		rec, err := c.Recall(ctx, id, &memoryv1.RecallRequest{Kind: "summaries", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rec.GetTotal() > 0 {
			if len(rec.GetSummaries()) != 1 || len(rec.GetMessages()) != 0 || rec.GetSummaries()[0].GetFirstSeq() != 1 {
				t.Fatalf("recall of summaries: %v", rec)
			}
			return rec.GetSummaries()[0]
		}
	}
	t.Fatal("setup: nothing was archived")
	return nil
}

func recalledSummary(cx *memoryv1.ContextReply, id string) *memoryv1.ContextMessage {
	for _, m := range cx.GetMessages() {
		if m.GetLayer() == "recalled" && m.GetId() == "recalled:summary:"+id {
			return m
		}
	}
	return nil
}

// TestArchivedSummaries: on a real node, an archived L2 summary is paged by
// recall (kind "summaries"), found by search when asked for
// (include_summaries, kind "summary"), offered to the assembler (the
// context's recalled layer shows it, the log holds a reference that time
// travel reads back) and gone with its session.
func TestArchivedSummaries(t *testing.T) {
	n, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	const id = "arch"
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1", MaxContextTokens: 1500, ReservedOutputTokens: 500,
		Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, ArchivedSummaries: true}}); err != nil {
		t.Fatal(err)
	}
	sum := archiveFact(t, ctx, n, c, id, "The vault code for the Lisbon office is 7731.")
	if !strings.Contains(sum.GetText(), "7731") {
		t.Fatalf("setup: the archived summary does not mention the vault: %q", sum.GetText())
	}
	if _, err := c.Recall(ctx, id, &memoryv1.RecallRequest{Kind: "bogus"}); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Fatalf("recall of an unknown kind: %v", err)
	}

	q := "What is the vault code for the Lisbon office?"
	plain, err := c.Search(ctx, id, &memoryv1.SearchRequest{Query: q, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range plain.GetHits() {
		if h.GetMessage() == nil || h.GetSummary() != nil || h.GetKind() != "message" {
			t.Fatalf("search without include_summaries: %v", h)
		}
	}
	with, err := c.Search(ctx, id, &memoryv1.SearchRequest{Query: q, Limit: 20, IncludeSummaries: true})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, h := range with.GetHits() {
		if h.GetKind() == "summary" && h.GetSummary().GetId() == sum.GetId() && h.GetMessage() == nil {
			found = true
		}
	}
	if !found {
		t.Fatalf("search with include_summaries lacks summary %s: %v", sum.GetId(), with.GetHits())
	}

	if _, err := c.AppendMessages(ctx, id, userMsg(q)); err != nil {
		t.Fatal(err)
	}
	cx, err := c.Context(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	shown := recalledSummary(cx, sum.GetId())
	if shown == nil || !strings.HasPrefix(shown.GetContent(), "Archived summary of messages 1 to") || !strings.Contains(shown.GetContent(), "7731") {
		t.Fatalf("the context does not recall the archived summary:\n%s", layerText(cx, "recalled"))
	}
	// The log holds a reference; time travel reads the summary back from
	// the session's log and shows what was sent.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, err := actors.SessionAt(ctx, l, events.NewCodec(), id, actors.Point{Seq: cx.GetSeq()})
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Assembled(); len(a.GetRecalled()) == 0 || slices.ContainsFunc(a.GetRecalled(), func(r *memoryv1.RecalledItem) bool { return r.GetSummaryId() != "" && r.GetText() != "" }) {
		t.Fatalf("recorded sections: %v", a)
	}
	past, err := actors.ContextAt(ctx, l, nil, events.NewCodec(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := recalledSummary(past, sum.GetId()); got == nil || got.GetContent() != shown.GetContent() || got.GetTokens() != shown.GetTokens() {
		t.Fatalf("time travel shows %v, the node sent %v", got, shown)
	}

	if _, err := c.EraseSession(ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Recall(ctx, id, &memoryv1.RecallRequest{Kind: "summaries"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != 404 {
		t.Fatalf("recall of an erased session's summaries: %v", err)
	}
}
