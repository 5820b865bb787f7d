package segmented

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// plantedFacts are the facts a long conversation must not forget: three
// near its beginning, three in its middle, three near its end. Each is
// found by its id. They are richer than the background facts (a decision
// or commitment with an id, numbers, a date, a name), as the facts people
// come back to usually are.
var plantedFacts = []struct {
	where, key string
	text       string
	tool       bool
}{
	{"beginning", "KICK-1001", "We decided the project codename is Falcon: kickoff budget 12,500 EUR under ticket KICK-1001, approved by Dana on March 3.", false},
	{"beginning", "ARCH-2002", "Final decision: the primary database is PostgreSQL 16 in region eu-west-1, tracked as ARCH-2002.", false},
	{"beginning", "VEND-3003", "Priya committed to deliver the vendor shortlist VEND-3003 by Friday, April 12.", false},
	{"middle", "INC-4004", "We agreed to move the launch to September 18 once incident INC-4004 is closed.", false},
	{"middle", "CTR-5005", "status: ok\ncontract CTR-5005 signed: 48 months at 3,900 EUR per month", true},
	{"middle", "RUN-6006", "Marcus will own the migration runbook RUN-6006, due on October 2.", false},
	{"end", "BETA-7007", "We decided to cap the beta at 250 users, ticket BETA-7007.", false},
	{"end", "RF-8008", "status: ok\nrefund RF-8008 issued: 312.40 EUR to Mrs. Okafor", true},
	{"end", "LIC-9009", "Open question: should we renew license LIC-9009 before December 1?", false},
}

// plantAt returns the message index (of n) at which planted fact i is
// appended.
func plantAt(i, n int) int {
	switch plantedFacts[i].where {
	case "beginning":
		return 3 + 7*i
	case "middle":
		return n/2 - 10 + 10*(i-3)
	default:
		return n - 30 + 12*(i-6)
	}
}

type growthResult struct {
	messages     int
	usageMean    float64 // mean used/budget after each append, second half
	usageMin     float64
	usageMax     float64
	l2Summaries  int
	condensed    bool // L2 starts with a condensed summary
	compressions uint64
	archived     uint64
	kept         map[string]bool // planted key -> in the context at the end
	noCompressAt int             // appends before the first compression
	facts        int             // background facts planted
	factsKept    int             // ... all of whose keys are in the context at the end
	verbatim     int             // messages verbatim in L1 at the end
}

// grow appends n messages of 20-200 tokens one command at a time (a tool
// call and its result as one command) to a session of the given budget and
// profile, with background facts and the planted facts, and reports what
// the context holds at the end. Every 10th command is checked like the
// property tests check every one (invariants, compression events, replay).
func grow(t tb, budget int, profile string, n int, seed uint64) growthResult {
	t.Helper()
	s := mustCreate(t, &memoryv1.CreateSessionRequest{Profile: profile, SystemPrompt: "You are a project assistant.",
		MaxContextTokens: uint32(budget + 500), ReservedOutputTokens: 500})
	env := testEnv(t)
	c := newCorpus(seed)
	rnd := rand.New(rand.NewPCG(seed, 11))
	planted := map[int]int{}
	for i := range plantedFacts {
		planted[plantAt(i, n)] = i
	}
	res := growthResult{messages: n, usageMin: 2, noCompressAt: -1}
	var usageSum float64
	var usageN int
	var background [][]string
	calls := 0
	for i := 0; i < n; i++ {
		role := memoryv1.Role_ROLE_USER
		if i%2 == 1 {
			role = memoryv1.Role_ROLE_ASSISTANT
		}
		var msgs []*memoryv1.MessageInput
		if p, ok := planted[i]; ok && plantedFacts[p].tool {
			calls++
			id := fmt.Sprintf("call-%d", calls)
			msgs = []*memoryv1.MessageInput{assistant("", &memoryv1.ToolCall{Id: id, Name: "crm", Arguments: `{"q":"latest"}`}), toolResult(id, plantedFacts[p].text)}
		} else {
			target := 20 + rnd.IntN(181) // tokens
			var b strings.Builder
			if ok {
				b.WriteString(plantedFacts[p].text)
			} else if f := c.fact(); rnd.IntN(10) < 3 && f.tool == nil {
				b.WriteString(strings.ToUpper(f.text[:1]) + f.text[1:])
				background = append(background, f.keys)
			} else {
				b.WriteString(c.pick(corpusFiller))
			}
			for have := env.Tokenizer.Count(b.String()); have < target; {
				f := " " + c.pick(corpusFiller)
				have += env.Tokenizer.Count(f) // about: tokens at the seam may merge
				b.WriteString(f)
			}
			msgs = []*memoryv1.MessageInput{{Role: role, Content: b.String()}}
		}
		evs, err := s.DecideAppend(&memoryv1.AppendRequest{Messages: msgs}, env)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if res.noCompressAt < 0 && compresses(evs) {
			res.noCompressAt = i
		}
		// The full checks (a replica replayed from the snapshot, every
		// event against the state it was decided on) cost what the session
		// holds: every 10th command, and the budget after every one.
		if i%10 == 0 || i == n-1 {
			checkCompressionEvents(t, s, evs)
			commit(t, s, fmt.Sprintf("m%d", i), evs)
			checkInvariants(t, s)
		} else if err := s.Apply(Meta{CommandID: fmt.Sprintf("m%d", i), Version: s.Version() + 1, Seq: s.LastSeq() + 1}, evs); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
		if s.PlannedTokens() > s.Budget() || s.tok.l2 > uint64(s.snap.Config.GetMaxL2Tokens()) {
			t.Fatalf("append %d: %d of %d tokens, L2 %d", i, s.PlannedTokens(), s.Budget(), s.tok.l2)
		}
		if i >= n/2 {
			u := float64(s.UsedTokens()) / float64(s.Budget())
			usageSum += u
			usageN++
			res.usageMin, res.usageMax = min(res.usageMin, u), max(res.usageMax, u)
		}
	}
	res.usageMean = usageSum / float64(usageN)
	res.l2Summaries = len(s.snap.L2)
	res.condensed = len(s.snap.L2) > 0 && len(s.snap.L2[0].SummaryIds) > 0
	res.compressions = s.snap.Compressions
	res.archived = s.snap.ArchivedL2Count
	var text strings.Builder
	for _, m := range s.Context().Messages {
		text.WriteString(m.Content)
		text.WriteString("\n")
	}
	res.kept = map[string]bool{}
	for _, f := range plantedFacts {
		res.kept[f.key] = strings.Contains(text.String(), f.key)
	}
	res.facts = len(background)
	for _, keys := range background {
		all := true
		for _, k := range keys {
			all = all && strings.Contains(text.String(), k)
		}
		if all {
			res.factsKept++
		}
	}
	for _, e := range s.snap.L1 {
		if e.GetMessage() != nil {
			res.verbatim++
		}
	}
	return res
}

func compresses(evs []proto.Message) bool {
	for _, ev := range evs {
		switch ev.(type) {
		case *memoryv1.L1Summarized, *memoryv1.L1Evicted, *memoryv1.L2Archived:
			return true
		}
	}
	return false
}

func (r growthResult) keptIn(where string) (kept, of int) {
	for _, f := range plantedFacts {
		if f.where == where {
			of++
			if r.kept[f.key] {
				kept++
			}
		}
	}
	return kept, of
}

// TestGradualGrowthUsesL2AndKeepsFacts: 1,200 messages of 20-200 tokens,
// one per command, under the default profile at budgets of 1k, 8k and 20k
// tokens. At the end L2 holds summaries (headed by a condensed one) and the
// context holds planted facts from the beginning, the middle and the end.
func TestGradualGrowthUsesL2AndKeepsFacts(t *testing.T) {
	if testing.Short() {
		t.Skip("long conversation")
	}
	const n = 1200
	for _, budget := range []int{1000, 8000, 20000} {
		r := grow(t, budget, "", n, 1)
		b, bn := r.keptIn("beginning")
		m, mn := r.keptIn("middle")
		e, en := r.keptIn("end")
		t.Logf("budget %5d: usage %.1f%% (%.1f-%.1f%%) over the second half; first compression at message %d; %d compression steps; L2 %d summaries (condensed head %v), %d archived; planted facts kept: beginning %d/%d, middle %d/%d, end %d/%d",
			budget, 100*r.usageMean, 100*r.usageMin, 100*r.usageMax, r.noCompressAt, r.compressions, r.l2Summaries, r.condensed, r.archived, b, bn, m, mn, e, en)
		if r.l2Summaries == 0 || !r.condensed {
			t.Errorf("budget %d: L2 holds %d summaries, condensed head %v", budget, r.l2Summaries, r.condensed)
		}
		if b == 0 || m == 0 || e == 0 {
			t.Errorf("budget %d: planted facts kept: %v", budget, r.kept)
		}
	}
}

// TestFittingConversationIsNotCompressed: under the default profile a
// conversation that fits the budget is never compressed, however full the
// context gets; the first append that does not fit is.
func TestFittingConversationIsNotCompressed(t *testing.T) {
	s := mustCreate(t, &memoryv1.CreateSessionRequest{SystemPrompt: "Be brief.", MaxContextTokens: 4000, ReservedOutputTokens: 500})
	c := newCorpus(3)
	for i := range 1000 {
		before := s.PlannedTokens()
		ins, _ := c.messages(1, chatty)
		evs := appendOK(t, s, ins...)
		var appended uint64
		for _, ev := range evs {
			if ma, ok := ev.(*memoryv1.MessagesAppended); ok {
				appended = sumTokens(ma.Messages)
			}
		}
		if !compresses(evs) {
			continue
		}
		if before+appended <= s.Budget() {
			t.Fatalf("append %d compressed at %d + %d tokens of %d: it fit", i, before, appended, s.Budget())
		}
		t.Logf("first compression at append %d, with the context at %.1f %% of the budget before it", i, float64(before)*100/float64(s.Budget()))
		return
	}
	t.Fatal("never compressed")
}
