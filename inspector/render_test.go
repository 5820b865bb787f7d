package inspector

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// leavingCtx is a request context whose client leaves after live calls
// of Err.
type leavingCtx struct {
	context.Context
	live, calls int
}

func (c *leavingCtx) Err() error {
	c.calls++
	if c.calls > c.live {
		return context.Canceled
	}
	return nil
}

// TestRenderStopsWhenTheClientLeaves: a page whose client left while it
// was being built stops at its next write and sends nothing; before, a
// timeline of thousands of rows was built to the end for nobody.
func TestRenderStopsWhenTheClientLeaves(t *testing.T) {
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	in := &Inspector{pages: pages, deps: Deps{Logger: slog.New(slog.DiscardHandler)}}
	p := timelinePage{Base: Base{Session: "s"}, Info: &memoryv1.SessionInfo{SessionId: "s"}}
	for i := range 5000 {
		p.Rows = append(p.Rows, timelineRow{Seq: uint64(i + 1), Kind: "append", Events: []timelineEvent{{Type: "MessagesAppended", Detail: fmt.Sprint("turn ", i)}}})
		p.Seqs = append(p.Seqs, uint64(i+1))
	}
	full := httptest.NewRecorder()
	in.render(context.Background(), full, 200, "timeline.html", p)
	if full.Code != 200 || full.Body.Len() < 5000*50 {
		t.Fatalf("the whole page: %d, %d bytes: %.300s", full.Code, full.Body.Len(), full.Body.String())
	}
	ctx := &leavingCtx{Context: context.Background(), live: 100}
	rec := httptest.NewRecorder()
	in.render(ctx, rec, 200, "timeline.html", p)
	if rec.Body.Len() != 0 || rec.Code != 200 || len(rec.Header()) != 0 {
		t.Errorf("a client that left was sent %d bytes, headers %v", rec.Body.Len(), rec.Header())
	}
	if ctx.calls > ctx.live+3 {
		t.Errorf("the page went on after the client left: %d writes asked", ctx.calls)
	}
}
