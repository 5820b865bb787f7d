package segmented

import (
	"fmt"
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// maxCompressionSteps guards the compression loop; each step consumes at
// least one verbatim message, so the loop ends long before in practice.
const maxCompressionSteps = 10000

// compress runs the adaptive compression policy on sc, a state inside a
// simulation transaction that already holds the command's other events, and
// returns the compression events (applied to sc as they are decided):
//
//   - usage < summarize_pct: nothing;
//   - >= summarize_pct: summarize the oldest summarize_batch L1 entries in place;
//   - >= summarize_more_pct: the oldest summarize_more_batch;
//   - >= evict_pct (or over the budget): evict the oldest evict_batch to L2;
//
// repeated until usage < summarize_pct or nothing more can be compressed.
// L2 is archived when it exceeds max_l2_tokens, or when the budget cannot
// hold otherwise. The caller checks the budget afterwards (413).
func compress(sc *State, env Env) ([]proto.Message, error) {
	cfg := sc.snap.GetConfig()
	prof := cfg.GetProfile()
	budget := sc.Budget()
	var out []proto.Message
	emit := func(ev proto.Message) error {
		if err := sc.applyEvent(ev, env.NowUnixNano); err != nil {
			return fmt.Errorf("segmented: compression produced an inconsistent event: %w", err)
		}
		out = append(out, ev)
		return nil
	}
	atLeast := func(used uint64, pct uint32) bool { return used*100 >= uint64(pct)*budget }
	for range maxCompressionSteps {
		used := sc.PlannedTokens()
		over := used > budget
		if !over && !atLeast(used, prof.GetSummarizePct()) {
			break
		}
		batch, evict := prof.GetSummarizeBatch(), false
		switch {
		case over || atLeast(used, prof.GetEvictPct()):
			batch, evict = prof.GetEvictBatch(), true
		case atLeast(used, prof.GetSummarizeMorePct()):
			batch = prof.GetSummarizeMoreBatch()
		}
		ev := planStep(sc, int(batch), evict, env)
		if ev != nil {
			if err := emit(ev); err != nil {
				return nil, err
			}
			continue
		}
		if over && len(sc.snap.L2) > 0 {
			if err := emit(archiveEvent(sc)); err != nil {
				return nil, err
			}
			continue
		}
		break
	}
	if sc.tok.l2 > uint64(cfg.GetMaxL2Tokens()) {
		if err := emit(archiveEvent(sc)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func archiveEvent(sc *State) *memoryv1.L2Archived {
	// A copy: the event must not share L2's backing array, which the state
	// appends to in place.
	return &memoryv1.L2Archived{Summaries: slices.Clone(sc.snap.L2), Tokens: uint32(sc.tok.l2)}
}

// planStep decides one summarize (in place) or evict (to L2) step over the
// oldest L1 entries, or returns nil when no run can be usefully compressed.
// It starts with the oldest batch entries and widens the run (by batch)
// when the summary would not be strictly smaller than what it covers.
func planStep(sc *State, batch int, evict bool, env Env) proto.Message {
	l1 := sc.snap.L1
	batch = max(batch, 1)
	prevEnd := 0
	g, limit := toolGroups(l1), latestUser(l1)
	for k := batch; ; k += batch {
		end := g.cut(k, limit)
		if end <= prevEnd {
			if k >= len(l1) {
				return nil
			}
			continue
		}
		prevEnd = end
		if sum := summarizeRun(sc, l1[:end], env); sum != nil {
			if evict {
				return &memoryv1.L1Evicted{Summary: sum}
			}
			return &memoryv1.L1Summarized{Summary: sum}
		}
		if k >= len(l1) {
			return nil
		}
	}
}

// summarizeRun returns the summary of run, or nil when it would not be
// strictly smaller than the run (or the run holds no verbatim message, so
// compressing it would only churn).
func summarizeRun(sc *State, run []*memoryv1.L1Entry, env Env) *memoryv1.Summary {
	var covered uint64
	var ids []string
	verbatim := false
	for _, e := range run {
		covered += uint64(entryTokens(e))
		if m := e.GetMessage(); m != nil {
			verbatim = true
			ids = append(ids, m.Id)
		} else {
			ids = append(ids, e.GetSummary().GetMessageIds()...)
		}
	}
	if !verbatim {
		return nil
	}
	limit := int(sc.snap.GetConfig().GetSummaryMaxTokens())
	if c := int(covered) - MessageOverheadTokens - 1; c < limit {
		limit = c
	}
	if limit < 1 {
		return nil
	}
	text := env.summarizer().Summarize(run, limit, env.Tokenizer)
	if text == "" {
		return nil
	}
	tokens := textTokens(env.Tokenizer, text)
	if uint64(tokens) >= covered {
		return nil
	}
	first, _ := entryRange(run[0])
	_, last := entryRange(run[len(run)-1])
	return &memoryv1.Summary{
		Id:            fmt.Sprintf("s%d", sc.snap.NextSummarySeq),
		FirstSeq:      first,
		LastSeq:       last,
		Text:          text,
		Tokens:        tokens,
		Source:        SourceExtractive,
		MessageIds:    ids,
		CoveredTokens: uint32(covered),
	}
}

// latestUser returns the index of the latest user message in L1, or len(l1).
func latestUser(l1 []*memoryv1.L1Entry) int {
	for i := len(l1) - 1; i >= 0; i-- {
		if m := l1[i].GetMessage(); m != nil && m.Role == memoryv1.Role_ROLE_USER {
			return i
		}
	}
	return len(l1)
}

// cut returns how many of the oldest L1 entries (about k, at most limit,
// the index of the latest user message) may be compressed together:
//
//   - never the latest user message, nor anything after it;
//   - never part of a tool-call group (an assistant message with tool calls
//     and the tool messages answering them): a complete group that the
//     boundary cuts is taken whole; a group still waiting for a result, or
//     reaching past the latest user message, is left out whole.
func (g groups) cut(k, limit int) int {
	end := min(k, limit)
	for changed := true; changed; {
		changed = false
		for i := 0; i < end; i++ {
			owner := g.owner[i]
			if owner < 0 {
				continue
			}
			last := g.last[owner]
			if g.pending[owner] || last >= limit {
				// Leave the whole group out; never extend past it again.
				limit, end, changed = owner, owner, true
				break
			}
			if last+1 > end {
				end, changed = last+1, true
			}
		}
	}
	return end
}

type groups struct {
	owner   []int        // entry index -> index of its group's assistant message, or -1
	last    map[int]int  // assistant index -> index of the group's last member
	pending map[int]bool // assistant index -> some call still has no result
}

func toolGroups(l1 []*memoryv1.L1Entry) groups {
	g := groups{owner: make([]int, len(l1)), last: map[int]int{}, pending: map[int]bool{}}
	callOwner := map[string]int{}
	open := map[int]int{}
	for i, e := range l1 {
		g.owner[i] = -1
		m := e.GetMessage()
		if m == nil {
			continue
		}
		switch {
		case len(m.ToolCalls) > 0:
			g.owner[i], g.last[i], open[i] = i, i, len(m.ToolCalls)
			for _, c := range m.ToolCalls {
				callOwner[c.Id] = i
			}
		case m.Role == memoryv1.Role_ROLE_TOOL:
			if o, ok := callOwner[m.ToolCallId]; ok {
				g.owner[i], g.last[o] = o, i
				open[o]--
			}
		}
	}
	for o, n := range open {
		g.pending[o] = n > 0
	}
	return g
}

// checkBudget returns the 413 for a decision that leaves the state over
// budget: before and need are PlannedTokens before and after its events;
// what describes the change (called only for the 413).
func checkBudget(budget, before, need uint64, field string, what func() string) error {
	if need > budget {
		free := int64(budget) - int64(before)
		return reject(CodeTooLarge, field, "%s does not fit: the context would need %d tokens of a budget of %d even after compression; %d tokens are free now",
			what(), need, budget, max(free, 0))
	}
	return nil
}
