package segmented

import memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"

// planMarks returns marksFor(out) for the plan out that the planner has
// just made on s, from where seqs found the shown entries to break
// (l1Plan.breaks) instead of looking each of out's L1 seqs up in L1. Any
// other plan is marksFor's.
//
// marksFor looks at each shown entry in turn; one that is a message right
// after a shown message is passed at once (look finds so too), and the
// marker's last entry shown (prev) is then that entry. So only the breaks
// are looked at, with prev first brought to the chosen entry before the
// break (look leaves prev at or after the entry it looks at, and at it
// when a message).
func (s *State) planMarks(out *memoryv1.Assembled) (marked []uint64, tokens uint64) {
	c := s.plans
	if c == nil || !out.GetPlanned() || s.snap.GetDayMarks() < DayMarksAfterOtherDays {
		return s.marksFor(out)
	}
	l1 := s.snap.GetL1()
	lp := &c.lp
	// The plan out, made on this L1 (the shown hint checks both): the
	// breaks are out's.
	if _, _, ok := c.shown.get(out, s); !ok || len(c.ents) != len(l1) || c.planner.tail > len(l1) {
		return s.marksFor(out)
	}
	k := &marker{s: s, a: out, l1: l1, prev: -1}
	br := lp.breaks
	for i := 0; i+1 < len(br); i += 2 {
		k.prev = max(k.prev, int(br[i+1]))
		k.look(int(br[i]))
	}
	k.prev = max(k.prev, lp.lastShown)
	// The tail's first entry (the first at or after out's tail seq).
	k.look(c.planner.tail)
	return k.marked, k.tokens
}
