package segmented

import (
	"slices"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// TestPlanMarksAreMarksFor: the day marks planMarks reads from the spans
// the planner chose are marksFor's, walking the plan's L1 seqs, at every
// plan of a dated conversation under budgets that hide L1 entries, show
// summaries in L1 and make the context show marks the messages do not
// store.
func TestPlanMarksAreMarksFor(t *testing.T) {
	for _, budget := range []uint32{3000, 6000} {
		s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: budget, ReservedOutputTokens: 500, UserId: "u1",
			Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, RecallPct: 30, MemoryPct: 20}})
		plans, marked, hiding, summaries := 0, 0, 0, 0
		s.planWith = func(s *State, m *memoryv1.Message, c *Candidates, env Env) *memoryv1.Assembled {
			out := s.plan(m, c, env)
			if !out.GetPlanned() {
				return out
			}
			want, wantTokens := s.marksFor(out)
			got, gotTokens := s.planMarks(out)
			if !slices.Equal(got, want) || gotTokens != wantTokens {
				t.Fatalf("budget %d, version %d: planMarks %v (%d tokens), marksFor %v (%d tokens)", budget, s.Version(), got, gotTokens, want, wantTokens)
			}
			plans++
			if len(want) > 0 {
				marked++
			}
			if len(s.plans.lp.breaks) > 2 {
				hiding++
			}
			if len(s.plans.lp.sums) > 0 {
				summaries++
			}
			return out
		}
		talkUnderThePlan(t, s, budget, func([]proto.Message) {})
		if plans == 0 || marked == 0 || hiding == 0 || summaries == 0 {
			t.Fatalf("budget %d: setup: %d plans, %d with marks, %d with several breaks, %d with summaries in L1", budget, plans, marked, hiding, summaries)
		}
		t.Logf("budget %d: %d plans, %d with marks, %d with several breaks, %d with summaries in L1", budget, plans, marked, hiding, summaries)
	}
}
