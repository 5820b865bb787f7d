package segmented

import (
	"fmt"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// session200 returns a session after 200 turns (user, assistant with a tool
// call, tool result, assistant), compressed along the way.
func session200(b *testing.B) *State {
	b.Helper()
	s := mustCreate(b, &memoryv1.CreateSessionRequest{SystemPrompt: "You are a data assistant.", MaxContextTokens: 32000, ReservedOutputTokens: 2000})
	for i := range 200 {
		id := fmt.Sprintf("c%d", i)
		evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
			user(fmt.Sprintf("Turn %d: how many orders did Alice place in region %d?", i, i%7)),
			assistant("", call(id, "sql")),
			toolResult(id, strings.Repeat(fmt.Sprintf("row %d, ", i), 30)),
			assistant(fmt.Sprintf("Alice placed %d orders in region %d.", i*3, i%7)),
		}}, testEnv(b))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Apply(Meta{Version: s.Version() + 1, Seq: s.LastSeq() + 1}, evs); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkContext200Turns(b *testing.B) {
	s := session200(b)
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			_ = s.Context()
		}
	})
	b.Run("rebuilt", func(b *testing.B) {
		for b.Loop() {
			s.ctxCache = nil
			_ = s.Context()
		}
	})
}

func BenchmarkDecideAppend(b *testing.B) {
	s := session200(b)
	req := &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user("And how many did Bob place in region 3?")}}
	env := testEnv(b)
	for b.Loop() {
		if _, err := s.DecideAppend(req, env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApply applies a two-message append to a 200-turn session. Each
// iteration starts from the same state: Apply never modifies the snapshot it
// starts from (copy-on-write), so a shallow copy of the State is enough.
func BenchmarkApply(b *testing.B) {
	base := session200(b)
	evs, err := base.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{user("And Bob?"), assistant("Bob placed 12.")}}, testEnv(b))
	if err != nil {
		b.Fatal(err)
	}
	meta := Meta{Version: base.Version() + 1}
	for b.Loop() {
		st := base.scratch()
		if err := st.Apply(meta, evs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProfilesLongConversation is not a timing: it runs the long
// conversation of TestGradualGrowthUsesL2AndKeepsFacts (1,200 messages of
// 20-200 tokens) once per profile and budget and reports what the context
// holds at the end, to compare the profiles:
//
//	go test -run '^$' -bench ProfilesLongConversation -benchtime=1x ./internal/segmented/
//
// usage_%: mean usage of the budget over the second half; verbatim: messages
// verbatim in L1 at the end; facts_%: background facts (about 330) whose
// keys are all in the context; planted: planted facts (of 9) in the
// context; l2: L2 summaries; steps: compression steps.
func BenchmarkProfilesLongConversation(b *testing.B) {
	for _, prof := range []string{ProfileFill, ProfileBalanced, ProfileConversational, ProfileDataIntensive} {
		for _, budget := range []int{1000, 8000, 20000} {
			b.Run(fmt.Sprintf("%s/%d", prof, budget), func(b *testing.B) {
				var r growthResult
				for range b.N {
					r = grow(b, budget, prof, 1200, 1)
				}
				planted := 0
				for _, k := range r.kept {
					if k {
						planted++
					}
				}
				b.ReportMetric(100*r.usageMean, "usage_%")
				b.ReportMetric(float64(r.verbatim), "verbatim")
				b.ReportMetric(100*float64(r.factsKept)/float64(r.facts), "facts_%")
				b.ReportMetric(float64(planted), "planted")
				b.ReportMetric(float64(r.l2Summaries), "l2")
				b.ReportMetric(float64(r.compressions), "steps")
			})
		}
	}
}
