package segmented

import (
	"fmt"
	"math"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// maxCompressionSteps guards the compression loop; every step consumes a
// verbatim message, moves a summary from L1 to L2 or removes an L2 summary,
// so the loop ends long before in practice.
const maxCompressionSteps = 10000

// compressor decides the compression events of one command on sc, a state
// inside a simulation transaction that already holds the command's other
// events. Each event is applied to sc as it is decided, so the next decision
// sees its result. See doc.go ("Compression") for the policy.
type compressor struct {
	sc     *State
	env    Env
	prof   *memoryv1.CompressionProfile
	budget uint64
	out    []proto.Message
}

// compress runs the compression policy on sc and returns the events. The
// caller checks the budget afterwards (413).
func compress(sc *State, env Env) ([]proto.Message, error) {
	c := &compressor{sc: sc, env: env, prof: sc.snap.GetConfig().GetProfile(), budget: sc.Budget()}
	if !c.started() {
		return nil, nil
	}
	for range maxCompressionSteps {
		used := sc.PlannedTokens()
		over := used > c.budget
		if !over && !c.atLeast(used, c.prof.GetSummarizePct()) {
			break
		}
		ev := c.step(used, over)
		if ev == nil {
			break
		}
		if err := c.emit(ev); err != nil {
			return nil, err
		}
		if err := c.keepShares(); err != nil {
			return nil, err
		}
	}
	return c.out, nil
}

func (c *compressor) emit(ev proto.Message) error {
	if err := c.sc.applyEvent(ev, c.env.NowUnixNano); err != nil {
		return fmt.Errorf("segmented: compression produced an inconsistent event: %w", err)
	}
	c.out = append(c.out, ev)
	return nil
}

func (c *compressor) atLeast(used uint64, pct uint32) bool {
	return used*100 >= uint64(pct)*c.budget
}

// started reports whether the usage calls for compression: above start_pct
// of the budget, or (start_pct 0) at summarize_pct; always when over budget.
func (c *compressor) started() bool {
	used := c.sc.PlannedTokens()
	if used > c.budget {
		return true
	}
	if start := c.prof.GetStartPct(); start > 0 {
		return used*100 > uint64(start)*c.budget
	}
	return c.atLeast(used, c.prof.GetSummarizePct())
}

// step decides one compression step for the usage used: the pressure level
// picks summarize (summarize_batch), summarize more (summarize_more_batch)
// or evict (evict_batch). A level that finds nothing to do falls through to
// the next one only when the budget does not hold: then eviction, then
// archiving the oldest L2 summaries. nil: nothing more can be compressed.
func (c *compressor) step(used uint64, over bool) proto.Message {
	need := c.need(used)
	if !over && !c.atLeast(used, c.prof.GetEvictPct()) {
		batch := c.prof.GetSummarizeBatch()
		if c.atLeast(used, c.prof.GetSummarizeMorePct()) {
			batch = c.prof.GetSummarizeMoreBatch()
		}
		if sum := c.summarize(int(batch), need); sum != nil {
			return &memoryv1.L1Summarized{Summary: sum}
		}
		return nil // within budget: no fall-through
	}
	if ev := c.evict(int(c.prof.GetEvictBatch()), need); ev != nil {
		return ev
	}
	if over {
		return c.archiveForBudget(used - c.budget)
	}
	return nil
}

// need returns how many tokens a step should free. A profile that starts
// on demand (start_pct set, as fill) compresses only what is needed: a
// step takes the fewest of the oldest messages (at least minRun, at most
// its batch) whose summary brings the usage under summarize_pct. The
// design's profiles (start_pct 0) always take their batch.
func (c *compressor) need(used uint64) uint64 {
	if c.prof.GetStartPct() == 0 {
		return math.MaxUint64
	}
	target := (uint64(c.prof.GetSummarizePct())*c.budget + 99) / 100 // usage must end below this
	if used < target {
		return 1
	}
	return used - target + 1
}

// minRun is the fewest messages an on-demand step summarizes (fewer would
// spend most of the summary on its header).
const minRun = 2

// keepShares runs after every step: in-place summaries beyond L1's share
// move to L2 (see l1SummaryShare), and L2 above max_l2_tokens archives its
// oldest summaries.
func (c *compressor) keepShares() error {
	if ev := c.moveExcessSummaries(); ev != nil {
		if err := c.emit(ev); err != nil {
			return err
		}
	}
	if ev := c.archiveToCap(); ev != nil {
		return c.emit(ev)
	}
	return nil
}

// l1SummaryShare bounds the tokens of the in-place summaries in L1: at most
// one summary's worth (summary_max_tokens plus its overhead). They are the
// newest compressed messages; beyond the share the oldest move to L2, so
// in-place summaries never crowd out the verbatim messages.
func (c *compressor) l1SummaryShare() uint64 {
	return uint64(c.sc.snap.GetConfig().GetSummaryMaxTokens()) + MessageOverheadTokens
}

// leadingSummaries returns how many L1 entries from the start are
// summaries, and their tokens. Summaries are made from the oldest verbatim
// messages only, so they always lead L1.
func leadingSummaries(l1 []*memoryv1.L1Entry) (n int, tokens uint64) {
	for _, e := range l1 {
		sum := e.GetSummary()
		if sum == nil {
			break
		}
		n++
		tokens += uint64(sum.GetTokens())
	}
	return n, tokens
}

// summarize returns a new in-place summary of the oldest verbatim L1
// messages (about batch of them, see cut), or nil.
func (c *compressor) summarize(batch int, need uint64) *memoryv1.Summary {
	from, _ := leadingSummaries(c.sc.snap.L1)
	sum, _ := c.summarizeFrom(from, batch, need)
	return sum
}

// summarizeFrom summarizes the verbatim L1 messages from index from on:
// about batch of them — fewer when fewer are estimated to free need tokens
// (see need) — the run widened by batch while its summary would not be
// strictly smaller than the run. It returns the summary and the end of the
// run, or nil.
func (c *compressor) summarizeFrom(from, batch int, need uint64) (*memoryv1.Summary, int) {
	l1 := c.sc.snap.L1
	batch = max(batch, 1)
	g, limit := toolGroups(l1), latestUser(l1)
	first := batch
	for k := minRun; k < batch && need != math.MaxUint64; k++ {
		end := g.cut(from+k, limit)
		var covered uint64
		for _, e := range l1[from:end] {
			covered += uint64(entryTokens(e))
		}
		// The summary's cap bounds what it keeps: covered minus the cap
		// is the least a summary of the run frees.
		cap := uint64(summaryTarget(int(covered), int(c.sc.snap.GetConfig().GetSummaryMaxTokens())) + MessageOverheadTokens)
		if covered > cap && covered-cap >= need {
			first = k
			break
		}
	}
	prevEnd := from
	for k := from + first; ; k += batch {
		end := g.cut(k, limit)
		// Defensive: a run never reaches into a summary (L1 is summaries,
		// then verbatim messages).
		for i := from; i < end; i++ {
			if l1[i].GetMessage() == nil {
				end = i
				break
			}
		}
		if end > prevEnd {
			prevEnd = end
			if sum := summarizeRun(c.sc, l1[from:end], c.env); sum != nil {
				return sum, end
			}
		}
		if k >= len(l1) {
			return nil, 0
		}
	}
}

// evict returns the L1Evicted that moves the oldest batch L1 entries to L2:
// the in-place summaries among them as they are, the verbatim messages
// among them as one new summary of those messages only (tool groups whole,
// never the latest user message). nil when there is nothing to move.
func (c *compressor) evict(batch int, need uint64) *memoryv1.L1Evicted {
	l1 := c.sc.snap.L1
	n, _ := leadingSummaries(l1)
	moved := min(n, max(batch, 1))
	ev := &memoryv1.L1Evicted{}
	for _, e := range l1[:moved] {
		ev.MovedSummaryIds = append(ev.MovedSummaryIds, e.GetSummary().GetId())
	}
	if rest := batch - moved; moved == n && rest > 0 {
		ev.Summary, _ = c.summarizeFrom(n, rest, need)
	}
	if len(ev.MovedSummaryIds) == 0 && ev.Summary == nil {
		return nil
	}
	return ev
}

// moveExcessSummaries returns the L1Evicted that moves the oldest in-place
// summaries to L2 until those left fit L1's share, or nil.
func (c *compressor) moveExcessSummaries() *memoryv1.L1Evicted {
	l1 := c.sc.snap.L1
	n, tokens := leadingSummaries(l1)
	share := c.l1SummaryShare()
	if tokens <= share {
		return nil
	}
	ev := &memoryv1.L1Evicted{}
	for _, e := range l1[:n] {
		if tokens <= share {
			break
		}
		sum := e.GetSummary()
		ev.MovedSummaryIds = append(ev.MovedSummaryIds, sum.GetId())
		tokens -= uint64(sum.GetTokens())
	}
	return ev
}

// archiveToCap returns the L2Archived that brings L2 back within
// max_l2_tokens by archiving its oldest summaries, or nil when L2 is within
// it. It archives the fewest oldest summaries (at least two) that, with one
// coarser summary condensing them at the head of L2, bring L2 within the
// cap; the condensed summary's token limit (condenseLimit) bounds what it
// adds, so one condensation is decided. Only when nothing can be condensed
// (a tiny max_l2_tokens) are the fewest oldest summaries that bring L2
// within the cap archived alone.
func (c *compressor) archiveToCap() *memoryv1.L2Archived {
	l2 := c.sc.snap.L2
	maxL2 := uint64(c.sc.snap.GetConfig().GetMaxL2Tokens())
	total := c.sc.tok.l2
	if total <= maxL2 {
		return nil
	}
	plain := 0 // the fewest summaries to archive without condensing
	var archived uint64
	for k := 1; k <= len(l2); k++ {
		archived += uint64(l2[k-1].GetTokens())
		rest := total - archived
		if rest > maxL2 {
			continue
		}
		if plain == 0 {
			plain = k
		}
		if k < 2 {
			continue
		}
		limit := c.condenseLimit(l2[:k])
		if limit < 1 || rest+uint64(limit+MessageOverheadTokens) > maxL2 {
			continue
		}
		if cond := c.condense(l2[:k]); cond != nil {
			return archiveEvent(l2[:k], cond)
		}
	}
	return archiveEvent(l2[:plain], nil)
}

// archiveForBudget returns the L2Archived that frees room when the budget
// does not hold (by over tokens) and L1 has nothing left to compress: the
// fewest oldest L2 summaries whose condensed summary frees over tokens (all
// of them when none does), or the last one alone. nil when L2 is empty.
func (c *compressor) archiveForBudget(over uint64) proto.Message {
	l2 := c.sc.snap.L2
	if len(l2) == 0 {
		return nil
	}
	var archived uint64
	for k := 1; k <= len(l2); k++ {
		archived += uint64(l2[k-1].GetTokens())
		if k < 2 {
			continue
		}
		limit := uint64(max(c.condenseLimit(l2[:k]), 0) + MessageOverheadTokens)
		if archived < limit+over && k < len(l2) {
			continue
		}
		if cond := c.condense(l2[:k]); cond != nil {
			return archiveEvent(l2[:k], cond)
		}
		break
	}
	return archiveEvent(l2[:1], nil)
}

func archiveEvent(sums []*memoryv1.Summary, condensed *memoryv1.Summary) *memoryv1.L2Archived {
	ev := &memoryv1.L2Archived{Condensed: condensed}
	// A copy: the event must not share L2's backing array, which the state
	// changes in place.
	ev.Summaries = make([]*memoryv1.Summary, len(sums))
	copy(ev.Summaries, sums)
	for _, s := range sums {
		ev.Tokens += s.GetTokens()
	}
	return ev
}

// condenseLimit is the token limit of a condensed summary of sums: at most
// summary_max_tokens and half of max_l2_tokens (the rest of L2 keeps the
// recent, detailed summaries), and strictly less than what it replaces.
// Until the condensed summary reaches its cap it keeps (almost) everything
// it condenses; from then on it keeps the most salient units of everything
// archived so far, in a fixed size: an archive frees what it archives.
func (c *compressor) condenseLimit(sums []*memoryv1.Summary) int {
	cfg := c.sc.snap.GetConfig()
	var covered int
	for _, s := range sums {
		covered += int(s.GetTokens())
	}
	return min(int(cfg.GetSummaryMaxTokens()), int(cfg.GetMaxL2Tokens())/2-MessageOverheadTokens, covered-MessageOverheadTokens-1)
}

// condense returns one coarser summary of the L2 summaries sums (two or
// more), or nil when it would not be strictly smaller than they are.
func (c *compressor) condense(sums []*memoryv1.Summary) *memoryv1.Summary {
	if len(sums) < 2 {
		return nil
	}
	limit := c.condenseLimit(sums)
	if limit < 1 {
		return nil
	}
	first, last := sums[0].GetFirstSeq(), sums[len(sums)-1].GetLastSeq()
	cond := condenserOf(c.env.summarizer())
	text, tokens := fitText(c.env.Tokenizer, condensedHeader(first, last), limit, func(n int) string {
		return cond.Condense(sums, n, c.env.Tokenizer)
	})
	var covered uint64
	for _, s := range sums {
		covered += uint64(s.GetTokens())
	}
	sum := newSummary(c.sc, first, last, text, tokens, covered)
	if sum != nil {
		sum.SummaryIds = make([]string, len(sums))
		for i, s := range sums {
			sum.SummaryIds[i] = s.GetId()
		}
	}
	return sum
}

// summaryHeader and condensedHeader start the text of every summary the
// policy makes: the range of messages it covers, for recall by offset.
func summaryHeader(first, last uint64) string {
	if first == last {
		return fmt.Sprintf("Summary of message %d:", first)
	}
	return fmt.Sprintf("Summary of messages %d-%d:", first, last)
}

// saidSpan is the days a run of dated messages was said on, for a
// summary's header: " (said 2023-05-08)" or " (said 2023-05-08 to
// 2023-05-09)"; "" when no message of the run has said_unix_nano.
func saidSpan(run []*memoryv1.L1Entry) string {
	var first, last int64
	for _, e := range run {
		m := e.GetMessage()
		if m.GetSaidUnixNano() == 0 {
			continue
		}
		if first == 0 || m.GetSaidUnixNano() < first {
			first = m.GetSaidUnixNano()
		}
		last = max(last, m.GetSaidUnixNano())
	}
	if first == 0 {
		return ""
	}
	a, b := time.Unix(0, first).UTC().Format(time.DateOnly), time.Unix(0, last).UTC().Format(time.DateOnly)
	if a == b {
		return " (said " + a + ")"
	}
	return " (said " + a + " to " + b + ")"
}

func condensedHeader(first, last uint64) string {
	return fmt.Sprintf("Condensed summary of messages %d-%d:", first, last)
}

// fitText returns header, a line break and the body body(n) makes for a
// token limit n, the whole within limit tokens, and its tokens as a summary
// (textTokens); "" when no body fits. (The tokens of a concatenation may
// differ from the sum of its parts, so the whole is counted, and the body's
// limit lowered when it does not fit.)
func fitText(tok Tokenizer, header string, limit int, body func(n int) string) (string, uint32) {
	n := limit - tok.Count(header+"\n")
	for range 4 {
		if n < 1 {
			return "", 0
		}
		b := body(n)
		if b == "" {
			return "", 0
		}
		text := header + "\n" + b
		count := tok.Count(text)
		if count <= limit {
			return text, uint32(count + MessageOverheadTokens)
		}
		n -= count - limit
	}
	return "", 0
}

// summaryTarget is the token limit for the summary of covered tokens: its
// body at most 1/summaryShare of them (at least minSummaryTokens), plus
// summaryFrame for the header and framing, at most summary_max_tokens, and
// always strictly less than covered. It is a cap, not a target: the
// extractive summarizer keeps only salient units, so on conversational
// text its summaries are much smaller than the cap (see
// TestSummarizerRetentionAndRatio), and only text dense with facts is
// compressed as little as summaryShare.
func summaryTarget(covered int, maxTokens int) int {
	limit := max(covered/summaryShare, minSummaryTokens) + summaryFrame
	return min(limit, maxTokens, covered-MessageOverheadTokens-1)
}

// summaryFrame: the tokens of a summary's header and line prefixes, which
// do not count against its share.
const summaryFrame = 12

// summaryShare: a summary holds at most a third of the tokens it covers.
// A smaller share drops facts at summary time that a later, better
// informed step (condensing archived summaries) could keep: on the
// fact-dense corpus a share of 1/5 kept a third fewer facts.
const summaryShare = 3

// minSummaryTokens is the smallest token limit a summary gets, so that a
// run of a few short messages still keeps its facts.
const minSummaryTokens = 24

// summarizeRun returns the summary of run (verbatim messages only), or nil
// when it would not be strictly smaller than the run.
func summarizeRun(sc *State, run []*memoryv1.L1Entry, env Env) *memoryv1.Summary {
	var covered uint64
	ids := make([]string, 0, len(run))
	for _, e := range run {
		m := e.GetMessage()
		if m == nil {
			return nil // never summarize a summary
		}
		covered += uint64(m.GetTokens())
		ids = append(ids, m.Id)
	}
	if len(run) == 0 {
		return nil
	}
	first, last := run[0].GetMessage().GetSeq(), run[len(run)-1].GetMessage().GetSeq()
	limit := summaryTarget(int(covered), int(sc.snap.GetConfig().GetSummaryMaxTokens()))
	sz := env.summarizer()
	text, tokens := fitText(env.Tokenizer, summaryHeader(first, last)+saidSpan(run), limit, func(n int) string {
		return sz.Summarize(run, n, env.Tokenizer)
	})
	sum := newSummary(sc, first, last, text, tokens, covered)
	if sum != nil {
		sum.MessageIds = ids
	}
	return sum
}

// newSummary returns the summary the policy makes of messages first..last
// (covered tokens): text, of tokens as fitText counts them. nil when no
// text fit or it is not strictly smaller than what it covers.
func newSummary(sc *State, first, last uint64, text string, tokens uint32, covered uint64) *memoryv1.Summary {
	if text == "" || uint64(tokens) >= covered {
		return nil
	}
	return &memoryv1.Summary{
		Id:            fmt.Sprintf("s%d", sc.snap.NextSummarySeq),
		FirstSeq:      first,
		LastSeq:       last,
		Text:          text,
		Tokens:        tokens,
		Source:        SourceExtractive,
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
