package actors

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestSessionAt: the state at each batch's sequence is the state the live
// actor had right after that batch (its reply's version), the latest is
// the live state, and a point before the session's first batch says so.
func TestSessionAt(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	ctx := context.Background()
	h.must(t, "other", &memoryv1.CreateSessionRequest{SystemPrompt: "x"}) // a batch before s1's first
	type point struct{ seq, version uint64 }
	var pts []point
	r := h.must(t, "s1", &memoryv1.CreateSessionRequest{SystemPrompt: "You are terse.", MaxContextTokens: 900, ReservedOutputTokens: 100}).(*memoryv1.CreateSessionReply)
	pts = append(pts, point{r.GetResult().GetSeq(), r.GetResult().GetVersion()})
	for i := range 12 {
		rep := h.must(t, "s1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
			{Role: memoryv1.Role_ROLE_USER, Content: "question number " + string(rune('a'+i)) + " about the invoice and the refund"},
			{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "answer with the invoice number INV-2041 and a refund of 40 EUR"}}}).(*memoryv1.AppendReply)
		pts = append(pts, point{rep.GetResult().GetSeq(), rep.GetResult().GetVersion()})
	}
	for _, p := range pts {
		st, err := SessionAt(ctx, h.log, h.codec, "s1", Point{Seq: p.seq})
		if err != nil {
			t.Fatalf("at seq %d: %v", p.seq, err)
		}
		if st.Snapshot().GetVersion() != p.version || st.LastSeq() != p.seq {
			t.Errorf("at seq %d: version %d last seq %d, want version %d", p.seq, st.Snapshot().GetVersion(), st.LastSeq(), p.version)
		}
	}
	latest, err := SessionAt(ctx, h.log, h.codec, "s1", Point{})
	if err != nil {
		t.Fatal(err)
	}
	live := h.live(t, "s1")
	if got := snapBytes(t, latest.Snapshot()); !proto.Equal(mustSnap(t, got), mustSnap(t, live)) {
		t.Error("the latest state differs from the live state")
	}
	_, err = SessionAt(ctx, h.log, h.codec, "s1", Point{Seq: pts[0].seq - 1})
	var ny *NotYetError
	if !errors.As(err, &ny) || !errors.Is(err, ErrNotYet) || ny.First != pts[0].seq {
		t.Errorf("before the first batch: %v, want NotYetError naming seq %d", err, pts[0].seq)
	}
	if _, err := SessionAt(ctx, h.log, h.codec, "nobody", Point{}); !errors.As(err, &ny) || ny.First != 0 {
		t.Errorf("no such session: %v", err)
	}
}
