package segmented

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func l2IDs(s *State) []string {
	var ids []string
	for _, sum := range s.snap.L2 {
		ids = append(ids, sum.Id)
	}
	return ids
}

// TestL2FIFOGrowsToCapThenArchivesOldest: L2 is append-only until it would
// exceed max_l2_tokens; then only its oldest summaries leave (to swap),
// condensed into one summary that stays at the head of L2.
func TestL2FIFOGrowsToCapThenArchivesOldest(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{Profile: ProfileBalanced, MaxContextTokens: 3500, ReservedOutputTokens: 500, MaxL2Tokens: 700})
	maxL2 := uint64(700)
	var prev []string
	var prevTokens uint64
	archivedOnce := false
	for i := range 150 {
		evs := appendOK(t, s,
			user(fmt.Sprintf("Question %d: what is the status of ticket T-%d for Alice? %s", i, 100+i, strings.Repeat("Some background. ", i%4))),
			assistant(fmt.Sprintf("Ticket T-%d is assigned to Bob and due on May %d. %s", 100+i, 1+i%28, strings.Repeat("We looked into it. ", 3+i%5))))
		checkInvariants(t, s)
		ids := l2IDs(s)
		archived := false
		for _, ev := range evs {
			if a, ok := ev.(*memoryv1.L2Archived); ok {
				archived = true
				// Only the oldest, never all of a long L2.
				if len(a.Summaries) >= len(prev)+1 && len(prev) > 3 {
					t.Fatalf("append %d archived %d summaries of an L2 of %d", i, len(a.Summaries), len(prev))
				}
			}
		}
		switch {
		case !archived:
			// Append-only: the old L2 is a prefix of the new one.
			if len(ids) < len(prev) || !slices.Equal(ids[:len(prev)], prev) || s.tok.l2 < prevTokens {
				t.Fatalf("append %d: L2 %v does not extend %v", i, ids, prev)
			}
		default:
			archivedOnce = true
			// The survivors keep their order; the head is condensed.
			head := s.snap.L2[0]
			if len(head.SummaryIds) == 0 || head.FirstSeq != 1 {
				t.Fatalf("append %d: L2 head %s is not a condensed summary from message 1: %v", i, head.Id, head)
			}
			var kept []string
			for _, id := range ids[1:] {
				if slices.Contains(prev, id) {
					kept = append(kept, id)
				}
			}
			if len(kept) > 0 {
				at := slices.Index(prev, kept[0])
				if !slices.Equal(prev[at:at+len(kept)], kept) {
					t.Fatalf("append %d: survivors %v are not a contiguous run of %v", i, kept, prev)
				}
			}
		}
		if s.tok.l2 > maxL2 {
			t.Fatalf("append %d: L2 %d > %d", i, s.tok.l2, maxL2)
		}
		prev, prevTokens = ids, s.tok.l2
	}
	if !archivedOnce || s.snap.ArchivedL2Count == 0 {
		t.Fatal("L2 never reached max_l2_tokens")
	}
	if len(s.snap.L2) < 3 {
		t.Fatalf("L2 holds %d summaries at the end", len(s.snap.L2))
	}
	t.Logf("L2: %d summaries, %d tokens of %d; %d archived", len(s.snap.L2), s.tok.l2, maxL2, s.snap.ArchivedL2Count)
}
