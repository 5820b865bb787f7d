package segmented

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/agentmem/agentmem/internal/facts"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The planner runs on the session actor's goroutine at every user message,
// so what it needs of the session is kept between user messages instead of
// being derived again from the whole L1 (see plan.go for the allocation
// itself):
//
//   - per L1 entry: its first seq, tokens, whether it is a bare question,
//     and its tool-call group (the offsets to its opener and, for an opener,
//     to the last result answering it) — planCache.ents, brought up to date
//     by sync with what changed since the last plan;
//   - the plain L1 spans (neither a summary nor raised by a hit) in the
//     order the allocation visits them — planCache.order (plan_order.go);
//   - the content words of every summary, as an inverted index
//     (summaryWords), so a summary's value is a few lookups;
//   - the token counts of the candidates' texts (countMemo).
//
// None of it is in the snapshot, and none of it decides anything: every
// entry is checked against the L1 it describes (by identity: a Message or
// Summary is never modified once in the state), and what does not match is
// computed again, so a cache left behind by a simulation that was rolled
// back, or by a shallow copy of the state, is only slower, never wrong.

// planCache is the planner's memory of a session (State.plans).
type planCache struct {
	// ents describes the L1 entries as of the last sync, in L1 order;
	// firstMsg is the first that is a message (the summaries lead).
	ents     []l1Info
	firstMsg int
	// relink: sync's buffer of the openers to link again (unlink).
	relink []int32
	// spans and order: the L1 spans of the last plan and its plain spans
	// by allocation order (plan_order.go); spare buffers for the next.
	spans, spareSpans []l1Span
	order, spareOrder []int32
	mapped            []int32
	// fresh: plainOrder's buffer.
	fresh []int32
	// Buffers of one plan (l1Plan, allocate), kept for the next.
	vals    []spanValue
	chosen  []bool
	idx     []int
	spec    []specPart
	specBuf []specPart
	heads   []specPart // spec merged with the base L2 summaries (mergeHeads)
	parts   []Part
	refs    []partRef
	words   summaryWords
	counts  countMemo
	// swapPart and earlierPart: the planner's maps, cleared for the next.
	swapPart    map[uint64]int
	earlierPart map[earlierRef]int
	// recs and mems: the planner's section parts (partRef), kept.
	recs []recalledRef
	mems []memChoice
	// memFirst: memoryFirsts of unprepared candidates.
	memFirst []int32
	// chosenParts marks the parts allocate chose, chosenIdx lists them.
	chosenParts []bool
	chosenIdx   []int
	// l2Words: the records of the L2 summaries (by index) in the
	// planner's index (sharedAt).
	l2Words []*summaryRec
	// l2Order is the L2 summaries (l2Sums, as of the last plan) in
	// Allocate's order when all are valued summaryBase (l2BaseOrder).
	l2Order []int32
	l2Sums  []*memoryv1.Summary
	// lp is the L1 side of the plan (newL1Plan), reused by the next.
	lp l1Plan
	// dirty is the first entry of ents changed since spans were made
	// (sync lowers it, spansTo resets it), spansTail the tail they were
	// made for: spansTo makes again only the spans from there on.
	dirty, spansTail int
	// recent[d] is the value of an L1 span d spans older than the tail.
	recent []float64
	// memOut: the planner's (plan.go); whyCands and recShown: why's
	// buffers (why.go).
	memOut   []int32
	whyCands []sectionCand
	recShown []int32
	// entSpan is, for each L1 entry older than the tail of the last plan,
	// the index of its span in spans (spansTo).
	entSpan []int32
	// recKeys and recSpare: sortRecalled's buffers.
	recKeys  []uint64
	recSpare []*memoryv1.RecalledItem
	// planner and memoTok: the planner of the plan being made.
	planner planner
	memoTok memoTokenizer
	// query: the planner's, kept for the next.
	query []string
	// shown is what the last plan shows of L1 and L2 (see countShown).
	shown shownHint
}

// l1Info is what the planner needs of one L1 entry.
type l1Info struct {
	msg *memoryv1.Message // the entry's message or summary: its identity
	sum *memoryv1.Summary
	seq uint64 // first seq
	// owner is the offset back to the message opening the tool-call group
	// the entry belongs to (0: it opens one; -1: none); last, for an
	// opener, the offset forward to the last message answering it (as
	// toolGroups has them).
	owner, last int32
	tokens      uint32
	bare        bool // BareQuestion(msg)
	user        bool
	// words is the summary's record in the planner's index (sharedAt).
	words *summaryRec
}

func (e *l1Info) same(x *memoryv1.L1Entry) bool {
	if m := x.GetMessage(); m != nil {
		return e.msg == m
	}
	return e.msg == nil && e.sum != nil && e.sum == x.GetSummary()
}

func newL1Info(x *memoryv1.L1Entry) l1Info {
	if m := x.GetMessage(); m != nil {
		return l1Info{msg: m, seq: m.GetSeq(), tokens: m.GetTokens(), owner: -1,
			bare: BareQuestion(m), user: m.GetRole() == memoryv1.Role_ROLE_USER}
	}
	sum := x.GetSummary()
	return l1Info{sum: sum, seq: sum.GetFirstSeq(), tokens: sum.GetTokens(), owner: -1}
}

// planCache returns the session's planner cache, made on first use.
func (s *State) planCache() *planCache {
	if s.plans == nil {
		s.plans = &planCache{}
	}
	return s.plans
}

// sync brings ents up to date with l1. L1 changes at its two ends only:
// compression replaces its oldest entries by summaries (which lead L1), an
// append adds entries at the end. So the cached entries from the first
// verbatim message of l1 on still describe l1 for as long as their
// identities match, and only the entries before and after that run are
// computed again. Identities match on a prefix of that run: entries are
// never replaced in the middle, and an entry appended by a simulation that
// was rolled back (or by another copy of the state) is a different
// message from the one appended since at its place, and so is every entry
// after it. The tool-call links of the new entries are made from those
// before them; when cached entries had to be dropped at the end, the kept
// openers their results had linked to are linked again (unlink).
func (c *planCache) sync(l1 []*memoryv1.L1Entry) {
	f := 0 // the first verbatim message of l1
	for f < len(l1) && l1[f].GetMessage() == nil {
		f++
	}
	c.firstMsg = f
	a := -1 // its index in ents
	if f < len(l1) {
		m := l1[f].GetMessage()
		if j, ok := slices.BinarySearchFunc(c.ents, m.GetSeq(), func(e l1Info, seq uint64) int { return cmp.Compare(e.seq, seq) }); ok && c.ents[j].msg == m {
			a = j
		}
	}
	if a < 0 {
		c.ents = c.ents[:0]
		for _, x := range l1 {
			c.ents = append(c.ents, newL1Info(x))
		}
		c.linkAll()
		c.dirty = 0
		return
	}
	n := min(len(c.ents)-a, len(l1)-f)
	k := sort.Search(n, func(k int) bool { return !c.ents[a+k].same(l1[f+k]) })
	// The kept openers whose last result is dropped (ents[a+k:]), at the
	// indexes they move to: linked again below.
	relink := c.relink[:0]
	for i := a + k; i < len(c.ents); i++ {
		if o := c.ents[i].owner; o > 0 {
			if j := i - int(o); j >= a && j < a+k {
				relink = append(relink, int32(j-a+f))
			}
		}
	}
	c.relink = relink
	// ents[a:a+k] describe l1[f:f+k]: move them to f.
	if f > a {
		c.ents = slices.Grow(c.ents[:a+k], f-a)[:f+k]
	}
	if f != a {
		c.dirty = 0 // every entry moved
	}
	copy(c.ents[f:], c.ents[a:a+k])
	c.ents = c.ents[:f+k]
	for i, x := range l1[:f] {
		// A summary's entry depends on the summary alone: kept when the
		// same (with its record in the planner's index).
		if !c.ents[i].same(x) {
			c.dirty = min(c.dirty, i)
			c.ents[i] = newL1Info(x)
		}
	}
	c.dirty = min(c.dirty, f+k)
	c.unlink(relink, f+k)
	for i := f + k; i < len(l1); i++ {
		c.ents = append(c.ents, newL1Info(l1[i]))
		c.link(i)
	}
}

// unlink links again the openers (among the first end entries) whose
// last result was at or after end (dropped): to their last result before
// end.
func (c *planCache) unlink(openers []int32, end int) {
	for _, j32 := range openers {
		j := int(j32)
		e := &c.ents[j]
		e.last = 0
		c.dirty = min(c.dirty, j)
		for i := j + 1; i < end; i++ {
			if x := c.ents[i]; x.owner > 0 && i-int(x.owner) == j {
				e.last = int32(i - j)
			}
		}
	}
}

// link sets the tool-call group of the new entry i from the entries before
// it: an assistant message with tool calls opens a group; a tool message
// joins the group of the latest message before it that opened its call.
func (c *planCache) link(i int) {
	e := &c.ents[i]
	m := e.msg
	e.owner, e.last = -1, 0
	switch {
	case m == nil:
	case len(m.GetToolCalls()) > 0:
		e.owner = 0
	case m.GetRole() == memoryv1.Role_ROLE_TOOL:
		for j := i - 1; j >= 0; j-- {
			if opens(c.ents[j].msg, m.GetToolCallId()) {
				e.owner = int32(i - j)
				c.ents[j].last = int32(i - j)
				c.dirty = min(c.dirty, j)
				return
			}
		}
	}
}

func opens(m *memoryv1.Message, callID string) bool {
	for _, tc := range m.GetToolCalls() {
		if tc.GetId() == callID {
			return true
		}
	}
	return false
}

// linkAll sets every tool-call group again, as toolGroups does.
func (c *planCache) linkAll() {
	callOwner := map[string]int{}
	for i := range c.ents {
		e := &c.ents[i]
		e.owner, e.last = -1, 0
		m := e.msg
		switch {
		case m == nil:
		case len(m.GetToolCalls()) > 0:
			e.owner = 0
			for _, tc := range m.GetToolCalls() {
				callOwner[tc.GetId()] = i
			}
		case m.GetRole() == memoryv1.Role_ROLE_TOOL:
			if o, ok := callOwner[m.GetToolCallId()]; ok {
				e.owner = int32(i - o)
				c.ents[o].last = int32(i - o)
			}
		}
	}
}

// verbatimAt returns the index of the verbatim L1 message at seq, or -1.
func (c *planCache) verbatimAt(seq uint64) int {
	// Verbatim messages mostly follow one another seq by seq: try where
	// seq would be counting back from the last entry before searching.
	if n := len(c.ents); n > 0 && seq <= c.ents[n-1].seq {
		if d := c.ents[n-1].seq - seq; d < uint64(n) {
			if i := n - 1 - int(d); c.ents[i].seq == seq {
				if c.ents[i].msg == nil {
					return -1
				}
				return i
			}
		}
	}
	// Before the first message: a summary's, or a message of the swap.
	f := c.firstMsg
	if f >= len(c.ents) || seq < c.ents[f].seq {
		return -1
	}
	i, ok := slices.BinarySearchFunc(c.ents[f:], seq, func(e l1Info, seq uint64) int { return cmp.Compare(e.seq, seq) })
	if !ok || c.ents[f+i].msg == nil {
		return -1
	}
	return f + i
}

// ownerOf returns the index of the message opening the tool-call group of
// entry i, or -1.
func (c *planCache) ownerOf(i int) int {
	if o := c.ents[i].owner; o >= 0 {
		return i - int(o)
	}
	return -1
}

// tailStart returns the index of the first L1 entry of the verbatim tail:
// the newest MinTailMessages entries, fewer when they hold more than
// MaxTailPct of the budget, but never after the latest user message, and
// never inside a tool-call group.
func (c *planCache) tailStart(budget uint64) int {
	ents := c.ents
	start := max(0, len(ents)-MinTailMessages)
	limit := budget * MaxTailPct / 100
	var tokens uint64
	for _, e := range ents[start:] {
		tokens += uint64(e.tokens)
	}
	latest := len(ents)
	for i := len(ents) - 1; i >= 0; i-- {
		if ents[i].user {
			latest = i
			break
		}
	}
	for ; start < latest && tokens > limit; start++ {
		tokens -= uint64(ents[start].tokens)
	}
	for start > 0 && start < len(ents) {
		o := c.ownerOf(start)
		if o < 0 || o >= start {
			break
		}
		start = o
	}
	return start
}

// l1Span is one part of the L1 entries older than the tail: an entry, or
// a tool call with its results (and what lies between them).
type l1Span struct {
	seq      uint64 // first seq of its first entry
	from, to int32  // L1 entries [from, to)
	tokens   uint64
	summary  bool // a summary (a part of kind PartSummary)
	bare     bool // a bare question: its value times questionWeight
}

// spansTo returns the spans of the L1 entries before tail, oldest first:
// a tool call's span ends after its last result (but not in the tail).
//
// The spans of the last plan (c.spans, made for c.spansTail) that end
// before the first entry changed since (c.dirty) and before both tails
// are the same: they stay where they are (the first kept of spans), the
// last plan's spans after them are copied to prevTail (plainOrder reads
// them), and only the rest is made again, in place.
func (c *planCache) spansTo(tail int) (spans, prevTail []l1Span, kept int) {
	ents := c.ents
	bound := min(c.dirty, c.spansTail, tail)
	// The spans end in order: the kept ones are those ending by bound,
	// but for one ending at the last plan's tail when the tail moved (it
	// may have been cut there).
	prev := c.spans
	lo, hi := 0, len(prev)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if int(prev[mid].to) > bound {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	kept = lo
	if kept > 0 && int(prev[kept-1].to) == c.spansTail && tail != c.spansTail {
		kept--
	}
	prevTail = append(c.spareSpans[:0], prev[kept:]...)
	out := prev[:kept]
	i := 0
	if kept > 0 {
		i = int(out[kept-1].to)
	}
	c.dirty, c.spansTail = len(ents), tail
	// entSpan of the entries of the kept spans is theirs still.
	c.entSpan = slices.Grow(c.entSpan[:min(i, len(c.entSpan))], tail)[:tail]
	for i < tail {
		e := &ents[i]
		end := i + 1
		if e.owner == 0 {
			end = min(max(end, i+int(e.last)+1), tail)
		}
		sp := l1Span{seq: e.seq, from: int32(i), to: int32(end), summary: e.msg == nil, bare: e.bare}
		for j, x := range ents[i:end] {
			sp.tokens += uint64(x.tokens)
			c.entSpan[i+j] = int32(len(out))
		}
		out = append(out, sp)
		i = end
	}
	return out, prevTail, kept
}

// recentValues returns, for d < m, the value of an L1 span d spans older
// than the tail (before the question and summary adjustments).
func (c *planCache) recentValues(m int) []float64 {
	for len(c.recent) < m {
		c.recent = append(c.recent, recentWeight*math.Exp2(-float64(len(c.recent))/recentHalfLife))
	}
	return c.recent[:m]
}

// summaryWords is an inverted index of the content words of the summaries
// the planner has valued: a summary's value for a user message is the
// share of the message's content words it holds, counted from the
// message's words (a handful) instead of the summary's (hundreds).
type summaryWords struct {
	recs  map[*memoryv1.Summary]*summaryRec
	post  map[string][]*summaryRec
	epoch uint32
	// gen counts the indexes made (reset drops one): a summaryRec kept
	// outside the index (sharedAt) is of the index only when of its gen.
	gen uint32
	// query is the message the counts of epoch are for (queryWords).
	query []string
}

// summaryRec is a summary of the index: how many words of the query of
// epoch it shares.
type summaryRec struct {
	sum    *memoryv1.Summary
	shared int
	epoch  uint32
	gen    uint32
}

// reset starts counting for the content words q of a user message, with
// present summaries in the session (the index is dropped when it holds
// many more: summaries archived since).
func (w *summaryWords) reset(q []string, present int) {
	if w.recs == nil || len(w.recs) > 2*present+64 {
		w.recs = map[*memoryv1.Summary]*summaryRec{}
		w.post = map[string][]*summaryRec{}
		w.gen++
	}
	w.epoch++
	w.query = q
	for _, word := range q {
		for _, r := range w.post[word] {
			if r.epoch != w.epoch {
				r.shared, r.epoch = 0, w.epoch
			}
			r.shared++
		}
	}
}

// sharedAt returns how many of the query's content words sum holds;
// *slot is where the planner keeps sum's record between plans (an L1
// entry, an L2 index), used instead of a lookup when it is still sum's
// and of the index.
func (w *summaryWords) sharedAt(sum *memoryv1.Summary, slot **summaryRec) int {
	r := *slot
	if r == nil || r.sum != sum || r.gen != w.gen {
		r = w.rec(sum)
		*slot = r
	}
	if r.epoch != w.epoch {
		return 0
	}
	return r.shared
}

// rec returns the record of sum, indexing sum first when new.
func (w *summaryWords) rec(sum *memoryv1.Summary) *summaryRec {
	r, ok := w.recs[sum]
	if !ok {
		words := facts.ContentWords(sum.GetText())
		r = &summaryRec{sum: sum, shared: sharedWords(w.query, words), epoch: w.epoch, gen: w.gen}
		w.recs[sum] = r
		for word := range words {
			w.post[word] = append(w.post[word], r)
		}
	}
	return r
}

// countMemo keeps the token counts of the texts the planner counted (the
// candidates' texts: a message recalled at one user message is often
// recalled at the next), in two generations of at most countMemoBytes of
// text each.
type countMemo struct {
	cur, prev map[string]int
	curBytes  int
}

const (
	countMemoBytes   = 64 << 10
	countMemoMaxText = 8 << 10
)

// memoTokenizer counts with tok, through m.
type memoTokenizer struct {
	tok Tokenizer
	m   *countMemo
}

func (t memoTokenizer) Count(text string) int {
	if len(text) > countMemoMaxText {
		return t.tok.Count(text)
	}
	m := t.m
	if n, ok := m.cur[text]; ok {
		return n
	}
	n, ok := m.prev[text]
	if !ok {
		n = t.tok.Count(text)
	}
	if m.cur == nil || m.curBytes+len(text) > countMemoBytes {
		m.prev, m.cur, m.curBytes = m.cur, make(map[string]int, len(m.cur)), 0
	}
	m.cur[text] = n
	m.curBytes += len(text)
	return n
}

// newPlanner returns the planner of the user message m (already in the
// state): the cache brought up to date with L1, the tail and the spans
// before it.
func (s *State) newPlanner(m *memoryv1.Message, cands *Candidates, env Env) *planner {
	c := s.planCache()
	l1 := s.snap.GetL1()
	c.sync(l1)
	var hits, items int
	if cands != nil {
		hits, items = len(cands.Recall), len(cands.Memory)
	}
	if c.swapPart == nil {
		c.swapPart, c.earlierPart = map[uint64]int{}, map[earlierRef]int{}
	}
	clear(c.swapPart)
	clear(c.earlierPart)
	c.query = queryWords(m.GetContent(), c.query)
	// The planner and its tokenizer live in the cache: a plan at a time.
	c.memoTok = memoTokenizer{env.Tokenizer, &c.counts}
	p := &c.planner
	*p = planner{s: s, tok: &c.memoTok, rawTok: env.Tokenizer, l1: l1, query: c.query,
		swapPart: c.swapPart, earlierPart: c.earlierPart}
	// Room for the parts there will be: summaries, hits, scope entries.
	n := len(s.snap.GetL2()) + hits + items + 4
	p.parts, p.refs = resize(c.parts, n)[:0], resize(c.refs, n)[:0]
	p.recs, p.mems = c.recs[:0], c.mems[:0]
	p.tail = c.tailStart(s.Budget())
	p.l1p = newL1Plan(c, p.tail)
	c.words.reset(p.query, len(s.snap.GetL2())+len(p.l1p.sums))
	return p
}

// raiseL1 raises to v the value of the span holding L1 entry i (older than
// the tail), making it a part first.
func (p *planner) raiseL1(i int, v float64) {
	lp := p.l1p
	k := lp.spanAt(i)
	if lp.vals[k].part < 0 {
		lp.setPart(k, p.add(lp.partOf(k)))
	}
	p.raise(int(lp.vals[k].part), v)
}

// shownHint is what a plan shows of L1 and L2, in tokens, as the planner
// counted them, and the state it planned on: when its ContextAssembled is
// applied to that state (in the decision's simulation, then by Apply), the
// totals need not be counted from the entries again.
type shownHint struct {
	sec            *memoryv1.Assembled
	l1, l2         uint64
	l1Len, l2Len   int
	l1Tok, l2Tok   uint64
	l1Ends, l2Ends [2]any
}

// noteShown records the hint of the plan out: the entries from the tail
// on, and the chosen spans and L2 summaries.
func (p *planner) noteShown(out *memoryv1.Assembled) {
	c := p.l1p.c
	h := shownHint{sec: out, l2: p.l1p.chosenL2}
	for _, e := range c.ents[p.tail:] {
		h.l1 += uint64(e.tokens)
	}
	h.l1 += p.l1p.chosenTokens
	h.l1Len, h.l2Len, h.l1Tok, h.l2Tok, h.l1Ends, h.l2Ends = stateEnds(p.s)
	c.shown = h
}

// stateEnds identifies the L1 and L2 of s well enough for a hint: their
// lengths, token totals and first and last entries.
func stateEnds(s *State) (l1Len, l2Len int, l1Tok, l2Tok uint64, l1Ends, l2Ends [2]any) {
	l1, l2 := s.snap.GetL1(), s.snap.GetL2()
	key := func(e *memoryv1.L1Entry) any {
		if m := e.GetMessage(); m != nil {
			return m
		}
		return e.GetSummary()
	}
	if n := len(l1); n > 0 {
		l1Ends = [2]any{key(l1[0]), key(l1[n-1])}
	}
	if n := len(l2); n > 0 {
		l2Ends = [2]any{l2[0], l2[n-1]}
	}
	return len(l1), len(l2), s.tok.l1, s.tok.l2, l1Ends, l2Ends
}

// get returns the hint's totals when it is for the plan sec applied to s.
func (h *shownHint) get(sec *memoryv1.Assembled, s *State) (l1, l2 uint64, ok bool) {
	if h.sec == nil || h.sec != sec {
		return 0, 0, false
	}
	l1Len, l2Len, l1Tok, l2Tok, l1Ends, l2Ends := stateEnds(s)
	if l1Len != h.l1Len || l2Len != h.l2Len || l1Tok != h.l1Tok || l2Tok != h.l2Tok || l1Ends != h.l1Ends || l2Ends != h.l2Ends {
		return 0, 0, false
	}
	return h.l1, h.l2, true
}
