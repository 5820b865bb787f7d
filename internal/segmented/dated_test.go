package segmented

import (
	"fmt"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestDatedHistoryCarriesItsDays: imported history (said_unix_nano) shows
// the turn that starts each day with its day, wherever the context shows it
// verbatim, and counts the mark in its tokens (so the budget holds); the
// other turns of that day are shown as written, and a summary of dated
// turns names the days it covers; a turn without said_unix_nano is shown
// as it was written.
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
			body, marked := strings.CutPrefix(m.GetContent(), DayMark(day.UnixNano())[:9])
			if marked {
				body = body[len("08] "):]
			}
			var n int
			_, err := fmt.Sscanf(body, "On this day I planted %d", &n)
			if starts := err == nil && n%10 == 0; marked != starts {
				t.Errorf("turn %q: day mark %v, want %v (only a day's first turn)", m.GetContent(), marked, starts)
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
