package segmented

import (
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The tokens of the L1 and L2 entries the context shows (totals.shownL1,
// shownL2) are derived data like the other totals: every event that adds,
// removes or replaces an L1 entry or an L2 summary adjusts them by what the
// plan shows of it (shownL1Add, shownL2Add), and a new plan (or a
// FromSnapshot) counts them again (countShown). So a decision checks that
// the context still fits (trimView) and a reply reports its usage without
// going through L1.

// shownL1Add adds L1 entry e to the shown total (removes it: add false),
// when the plan shows it.
func (s *State) shownL1Add(e *memoryv1.L1Entry, add bool) {
	if !showsL1(s.snap.GetAssembled(), e) {
		return
	}
	if n := uint64(entryTokens(e)); add {
		s.tok.shownL1 += n
	} else {
		s.tok.shownL1 -= n
	}
}

// shownL2Add adds L2 summary sum to the shown total (removes it: add
// false), when the plan shows it.
func (s *State) shownL2Add(sum *memoryv1.Summary, add bool) {
	if !showsL2(s.snap.GetAssembled(), sum) {
		return
	}
	if n := uint64(sum.GetTokens()); add {
		s.tok.shownL2 += n
	} else {
		s.tok.shownL2 -= n
	}
}

// countShown returns the tokens of the L1 and L2 entries the plan shows,
// counted from the entries.
func (s *State) countShown() (l1, l2 uint64) {
	a := s.snap.GetAssembled()
	if !a.GetPlanned() {
		return s.tok.l1, s.tok.l2
	}
	if s.plans != nil {
		if l1, l2, ok := s.plans.shown.get(a, s); ok {
			return l1, l2
		}
	}
	// L1 is in seq order and so, as the plan writes them, are l1_seqs:
	// one pass over both (a binary search for each entry otherwise).
	seqs := a.GetL1Seqs()
	merge := slices.IsSorted(seqs)
	j := 0
	var prev uint64
	for _, e := range s.snap.GetL1() {
		first, _ := entryRange(e)
		shown := first >= a.GetTailSeq()
		switch {
		case shown:
		case merge && first >= prev:
			for j < len(seqs) && seqs[j] < first {
				j++
			}
			shown = j < len(seqs) && seqs[j] == first
		default:
			shown = showsL1(a, e)
		}
		prev = first
		if shown {
			l1 += uint64(entryTokens(e))
		}
	}
	// l2_ids name summaries of L2 in L2 order, as the plan writes them:
	// matched in one pass when they all are so.
	ids := a.GetL2Ids()
	k := 0
	for _, sum := range s.snap.GetL2() {
		if k < len(ids) && ids[k] == sum.GetId() {
			l2 += uint64(sum.GetTokens())
			k++
		}
	}
	if k < len(ids) {
		l2 = 0
		for _, sum := range s.snap.GetL2() {
			if showsL2(a, sum) {
				l2 += uint64(sum.GetTokens())
			}
		}
	}
	return l1, l2
}
