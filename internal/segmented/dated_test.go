package segmented

import (
	"fmt"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestDatedHistoryCarriesItsDays: imported history (said_unix_nano) shows
// each turn with its day wherever the context shows it verbatim, counts
// the mark in the turn's tokens (so the budget holds), and a summary of
// dated turns names the days it covers; a turn without said_unix_nano is
// shown as it was written.
func TestDatedHistoryCarriesItsDays(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 900, ReservedOutputTokens: 100})
	day := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	for i := range 60 {
		at := day.Add(time.Duration(i/10) * 24 * time.Hour)
		u := user(fmt.Sprintf("On this day I planted %d tulips in the east bed.", i))
		u.SaidUnixNano = at.UnixNano()
		a := assistant(fmt.Sprintf("Noted: %d tulips.", i))
		a.SaidUnixNano = at.Add(time.Minute).UnixNano()
		appendOK(t, s, u, a)
		checkInvariants(t, s)
	}
	appendOK(t, s, user("And today?"))
	cx := s.Context()
	var sawL1, sawSummary bool
	for _, m := range cx.GetMessages() {
		switch {
		case m.GetLayer() == LayerL1 && m.GetRole() != memoryv1.Role_ROLE_SYSTEM:
			if m.GetContent() == "And today?" {
				continue
			}
			sawL1 = true
			if !strings.HasPrefix(m.GetContent(), "[2023-05-") {
				t.Errorf("dated L1 turn without its day: %q", m.GetContent())
			}
		case strings.Contains(m.GetContent(), "Summary of message"):
			sawSummary = true
			if !strings.Contains(m.GetContent(), "(said 2023-05-") {
				t.Errorf("summary of dated turns without their days: %q", m.GetContent())
			}
		}
	}
	if !sawL1 || !sawSummary {
		t.Fatalf("setup: the context shows no dated L1 turn (%v) or no summary (%v)", sawL1, sawSummary)
	}
	if cx.GetUsage().GetUsed() > cx.GetUsage().GetBudget() {
		t.Fatalf("used %d > budget %d", cx.GetUsage().GetUsed(), cx.GetUsage().GetBudget())
	}
}
