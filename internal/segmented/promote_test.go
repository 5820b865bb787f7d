package segmented

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestPromoteUsesTheFreeBudget promotes above 50 % usage (a lesson of the
// earlier implementation, which double-counted and failed there) and checks
// a promotion that does not fit (the only other message is the latest user
// message, which is never compressed) says how many tokens are free.
func TestPromoteUsesTheFreeBudget(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 2000, ReservedOutputTokens: 100})
	appendOK(t, s, user(strings.Repeat("alpha ", 1100)))
	if pct := s.Usage().GetPercent(); pct < 50 || pct >= 70 {
		t.Fatalf("usage %.1f%%, want 50..70", pct)
	}
	free := s.Budget() - s.PlannedTokens()
	fits := &memoryv1.Message{Id: "old1", Seq: 1, Role: memoryv1.Role_ROLE_ASSISTANT, Content: "x", Tokens: uint32(free)}
	step := func(evs []proto.Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		commit(t, s, "c"+strings.Repeat("x", int(s.Version())), evs)
		checkInvariants(t, s)
	}
	step(s.DecidePromote([]*memoryv1.Message{fits}, testEnv(t)))
	if got := s.Context().GetLayers().GetPromoted(); got != uint32(free) {
		t.Fatalf("promoted layer %d tokens, want %d", got, free)
	}
	if s.UsedTokens() != s.Budget() {
		t.Fatalf("used %d, budget %d", s.UsedTokens(), s.Budget())
	}
	if evs, err := s.DecidePromote([]*memoryv1.Message{fits}, testEnv(t)); err != nil || len(evs) != 0 {
		t.Fatalf("re-promote: %v %v", evs, err)
	}
	_, err := s.DecidePromote([]*memoryv1.Message{{Id: "old2", Tokens: 1}}, testEnv(t))
	if r := rejection(err); r == nil || r.Code != CodeTooLarge || !strings.Contains(r.Reason, "0 tokens are free") {
		t.Fatalf("over-budget promote: %v", err)
	}
	step(s.DecideClearPromoted())
	if len(s.Promoted()) != 0 || s.Context().GetLayers().GetPromoted() != 0 {
		t.Fatal("clear left promoted messages")
	}
	if evs, err := s.DecideClearPromoted(); err != nil || len(evs) != 0 {
		t.Fatalf("clearing an empty layer: %v %v", evs, err)
	}
}

// TestPromoteMakesRoom: a context the fill profile has filled to the budget
// still takes a promotion: the oldest L1 messages are compressed to make
// room, in the same batch.
func TestPromoteMakesRoom(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 2000, ReservedOutputTokens: 100})
	for i := 0; s.Usage().GetPercent() < 85; i++ {
		appendOK(t, s, user(fmt.Sprintf("Question %d: where is order ORD-%d?", i, 100+i)),
			assistant(fmt.Sprintf("Order ORD-%d left the Lyon warehouse on May %d. ", 100+i, 1+i%28)+strings.Repeat("It is on its way. ", 10)))
	}
	if s.snap.Compressions != 0 {
		t.Fatalf("compressed at %.0f %% usage", s.Usage().GetPercent())
	}
	old := &memoryv1.Message{Id: "old1", Seq: 1, Role: memoryv1.Role_ROLE_ASSISTANT, Content: "recalled", Tokens: uint32(s.Budget() / 4)}
	evs, err := s.DecidePromote([]*memoryv1.Message{old}, testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := evs[0].(*memoryv1.MessagesPromoted); !ok || len(evs) < 2 {
		t.Fatalf("batch %v: want the promotion, then compression", evs)
	}
	commit(t, s, "promote", evs)
	checkInvariants(t, s)
	if s.Context().GetLayers().GetPromoted() != old.Tokens {
		t.Fatal("promotion not in the context")
	}
}
