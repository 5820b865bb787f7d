package segmented

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// The weights of the allocation: the Value of each Part for the latest user
// message. They are round values chosen on the question-mode benchmark
// (membench), not fitted to it; each is kept only while the
// benchmark shows it helps.
//
//	| part                                                  | value                                 |
//	|-------------------------------------------------------|---------------------------------------|
//	| a search hit (swap or older L1), score s, best s1,    | hitWeight · s/s1 / (1 + r/hitRankScale) |
//	|   rank r (0..); without scores s/s1 is 1              |                                       |
//	| an older L1 entry, d entries before the tail          | recentWeight · 2^(−d/recentHalfLife)  |
//	| an earlier user question that states no fact         | its value · questionWeight            |
//	| a summary sharing k of the message's n content words  | summaryBase + summaryWeight · k/n     |
//	| a scope entry matching the message, score s, best s1  | memoryWeight · s/s1                   |
//	| a scope entry that does not match (top entries)       | memoryTopWeight / (1 + r)             |
//
// Measured and left out: the turns next to a hit (seq ± 1) as parts of
// half its value cost 1–2 points of evidence at every budget on the
// question-mode benchmark (their tokens push out other hits).
//
// A part that is both a hit and recent takes the larger value. Value per
// token decides (Allocate), so a short answer turn beats a long filler one
// of the same relevance.
const (
	hitWeight = 1.0
	// hitRankScale: BM25 scores fall slowly down the ranking (the 30th
	// hit often scores 0.6 of the first), so score alone let short, weak
	// hits outbid the answer by value per token: with 60 candidates the
	// classic benchmark fell from 100 % to 90.6 % at 2k. The rank decay
	// restores it and adds 4 points at 2k in question mode.
	hitRankScale    = 5.0
	recentWeight    = 0.4
	recentHalfLife  = 8.0
	questionWeight  = 0.3
	summaryWeight   = 0.35
	summaryBase     = 0.05
	memoryWeight    = 0.9
	memoryTopWeight = 0.25
)

// The floors of the allocation: what stays whatever the candidates.
const (
	// MinTailMessages: the newest L1 entries always shown verbatim (the
	// latest user message and what follows it, and whole tool-call groups,
	// are kept even beyond it), so a conversation about what was just said
	// still sees it.
	MinTailMessages = 6
	// MaxTailPct bounds the floor tail (a share of the budget) where it can
	// be cut: never below the latest user message and its tool groups.
	MaxTailPct = 25
	// MaxRecalledTokens caps the recalled section's messages of the
	// session's own swap, whatever recall_pct allows. (The event records
	// them by reference since; the cap stays, so the allocation, and the
	// context, are those of before.)
	MaxRecalledTokens = 8192
	// maxRecalledItemTokens trims one recalled message (a long tool
	// result) to its head.
	maxRecalledItemTokens = 1024
)

// partRef says what a Part stands for.
type partRef struct {
	l1From, l1To int // PartL1 / L1 summary: L1 entries [l1From, l1To)
	l2           int // PartSummary of L2: index in L2; -1 otherwise
	// rec and mem: a recalled message (planner.recs[rec-1]) or a memory
	// entry (planner.mems[mem-1]); 0: neither. Their items are made only
	// for the parts chosen.
	rec, mem int32
}

// section reports whether the part is an item of the recalled or memory
// section.
func (r partRef) section() bool { return r.rec != 0 || r.mem != 0 }

// recalledRef is a recalled part's message: of the session (sid "") or
// of session sid, as prepared; or, with sum set (m nil), an archived
// summary of the session (archived.go).
type recalledRef struct {
	m   *memoryv1.Message
	sum *memoryv1.Summary
	sid string
	it  preparedItem
}

func (r *recalledRef) item() *memoryv1.RecalledItem {
	x := &memoryv1.RecalledItem{}
	r.fill(x)
	return x
}

// fill sets the fields of x, a new item, to r's.
func (r *recalledRef) fill(x *memoryv1.RecalledItem) {
	if sum := r.sum; sum != nil {
		x.SummaryId, x.Seq, x.Role, x.Tokens = sum.GetId(), sum.GetLastSeq(), memoryv1.Role_ROLE_SYSTEM, r.it.tokens
		x.TextBytes, x.Trimmed = r.it.bytes, r.it.trimmed
		return
	}
	m := r.m
	// A reference, never the text: the session's own message (sid "")
	// as another session's is read back when the context is read.
	x.MessageId, x.Seq, x.Role, x.Tokens, x.SaidUnixNano = m.GetId(), m.GetSeq(), m.GetRole(), r.it.tokens, SaidAt(m)
	x.SessionId, x.TextBytes, x.Trimmed = r.sid, r.it.bytes, r.it.trimmed
}

// planner builds the Parts of one user message's allocation.
type planner struct {
	s   *State
	tok Tokenizer
	// rawTok is the decision's tokenizer (tok counts through a memo):
	// candidates prepared with it are used as they are (prepare.go).
	rawTok Tokenizer
	l1     []*memoryv1.L1Entry
	tail   int // index of the first L1 entry of the verbatim tail
	// query is the content words of the latest user message (queryWords).
	query []string
	parts []Part
	refs  []partRef
	// l1p holds the L1 entries older than the tail, as spans (plan_order.go).
	l1p *l1Plan
	// swapPart maps a swap message seq to its recalled part.
	swapPart map[uint64]int
	// earlierPart maps a message of another session (session id, seq) to
	// its recalled part.
	earlierPart map[earlierRef]int
	// l2First is the part of L2 summary 0 (when l2Len > 0), l2Len
	// how many L2 parts follow it.
	l2First, l2Len int
	// recs and mems hold what the section parts stand for (partRef).
	recs []recalledRef
	mems []memChoice
	// memCands and memValue are the memory candidates weighed and each
	// one's value (why.go names those chooseMemory left out).
	memCands []*memoryv1.MemoryItem
	memValue [MaxMemoryCandidates]float64
	// cands are the candidates of the plan (memorySum).
	cands *Candidates
	// prep is the candidates as prepared for the decision's tokenizer
	// (nil: unprepared), set by addHits.
	prep *prepared
	// memOut is, for each of mems, the index of its item in the plan's
	// memory section (-1: not chosen); set by plan for why.go.
	memOut []int32
}

// earlierRef names a message of another session.
type earlierRef struct {
	session string
	seq     uint64
}

// plan chooses the sections and the allocation for the user message m
// (already in the simulated state) from c.
func (s *State) plan(m *memoryv1.Message, c *Candidates, env Env) *memoryv1.Assembled {
	a := s.Assembly()
	p := s.newPlanner(m, c, env)
	p.addL1()
	p.addL2()
	if c != nil {
		if a.GetRecallPct() > 0 {
			p.addHits(c)
			p.addArchived(c)
		}
		if a.GetMemoryPct() > 0 {
			p.addMemory(c, a)
		}
	}
	out := &memoryv1.Assembled{ForMessageId: m.GetId(), ForSeq: m.GetSeq(), Planned: true, TailSeq: s.snap.GetNextMessageSeq()}
	if p.tail < len(p.l1) {
		out.TailSeq, _ = entryRange(p.l1[p.tail])
	}
	var caps [numPartKinds]uint64
	caps[PartRecalled] = min(s.Budget()*uint64(a.GetRecallPct())/100, MaxRecalledTokens)
	// Earlier sessions' messages are bounded by the room only
	// (recall_pct caps the session's own), so a new session whose user
	// asks about the past may fill its room with what they said before.
	caps[PartMemory] = s.sectionCap(a.GetMemoryPct())
	fixed := max(s.tok.rom, s.tok.pendingRom) + s.tok.kernel + s.tok.promoted
	for _, e := range p.l1[p.tail:] {
		fixed += uint64(entryTokens(e))
	}
	room := s.Budget() - min(s.Budget(), fixed)
	chosen := p.allocate(room, caps)
	if p.showsAll(chosen) {
		// Nothing hidden, no section: the same context as no plan at all,
		// and no event to write.
		return &memoryv1.Assembled{}
	}
	var nRec, nMem, nL2 int
	for _, i := range chosen {
		switch r := p.refs[i]; {
		case r.rec != 0:
			nRec++
		case r.mem != 0:
			nMem++
		case r.l2 >= 0:
			nL2++
		}
	}
	out.Recalled = make([]*memoryv1.RecalledItem, 0, nRec)
	out.Memory = make([]*memoryv1.MemoryItem, 0, nMem)
	out.L2Ids = make([]string, 0, nL2)
	// The items in one allocation each: they live as long as out.
	recItems, memItems := make([]memoryv1.RecalledItem, nRec), make([]memoryv1.MemoryItem, nMem)
	cache := p.l1p.c
	p.memOut = resize(cache.memOut, len(p.mems))
	cache.memOut = p.memOut
	for j := range p.memOut {
		p.memOut[j] = -1
	}
	for _, i := range chosen {
		switch r := p.refs[i]; {
		case r.rec != 0:
			x := &recItems[len(out.Recalled)]
			p.recs[r.rec-1].fill(x)
			out.Recalled = append(out.Recalled, x)
		case r.mem != 0:
			x := &memItems[len(out.Memory)]
			mc := &p.mems[r.mem-1]
			mc.fill(x, p.cands.memorySum(mc.from, mc.c))
			p.memOut[r.mem-1] = int32(len(out.Memory))
			out.Memory = append(out.Memory, x)
		case r.l2 >= 0:
			out.L2Ids = append(out.L2Ids, s.snap.L2[r.l2].GetId())
		}
	}
	out.Recalled, out.Memory, out.L2Ids = nilIfEmpty(out.Recalled), nilIfEmpty(out.Memory), nilIfEmpty(out.L2Ids)
	out.L1Seqs = p.l1p.seqs(p.l1p.c.ents)
	sortRecalled(out.Recalled, &cache.recKeys, &cache.recSpare)
	out.Recalled = p.continueEarlier(out.Recalled, chosen)
	out.Why = p.why(out, room, caps)
	// out.Memory is by tier already: the memory parts were added in
	// chooseMemory's order (by tier), and chosen is ascending.
	p.noteShown(out)
	return out
}

// nilIfEmpty returns nil for an empty slice (the events keep nil).
func nilIfEmpty[T any](x []T) []T {
	if len(x) == 0 {
		return nil
	}
	return x
}

// compareRecalled orders the recalled section: other sessions' messages
// first, by the day they were said, then session (a day's items of one
// session together, under one header: plan_continue.go), when said and
// seq; then the session's own by seq.
func compareRecalled(x, y *memoryv1.RecalledItem) int {
	xo, yo := x.GetSessionId() != "", y.GetSessionId() != ""
	switch {
	case xo != yo:
		if xo {
			return -1
		}
		return 1
	case xo:
		if c := cmp.Compare(unixDay(x.GetSaidUnixNano()), unixDay(y.GetSaidUnixNano())); c != 0 {
			return c
		}
		if c := cmp.Compare(x.GetSessionId(), y.GetSessionId()); c != 0 {
			return c
		}
		if c := cmp.Compare(x.GetSaidUnixNano(), y.GetSaidUnixNano()); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(x.GetSeq(), y.GetSeq()); c != 0 {
		return c
	}
	// An archived summary ends at a message that may be recalled too.
	return cmp.Compare(x.GetSummaryId(), y.GetSummaryId())
}

// showsAll reports whether the chosen parts are every L1 and L2 part and
// no section.
func (p *planner) showsAll(chosen []int) bool {
	if !p.l1p.plainAllChosen() {
		return false // a plain span hidden (checked first: it costs nothing)
	}
	n := 0
	for _, i := range chosen {
		if p.refs[i].section() {
			return false
		}
		n++
	}
	for _, r := range p.refs {
		if !r.section() {
			n--
		}
	}
	return n == 0
}

func (p *planner) add(part Part, ref partRef) int {
	p.parts = append(p.parts, part)
	p.refs = append(p.refs, ref)
	return len(p.parts) - 1
}

// addL1 makes a part of each summary older than the tail, valued by
// recency or by the content words it shares with the latest user message,
// whichever is more. The other L1 spans (an entry, or a tool call with its
// results) are valued by recency, times questionWeight for a bare
// question, and become parts only when a hit raises them (raiseL1); the
// allocation takes them from the order kept between plans (allocate).
func (p *planner) addL1() {
	lp := p.l1p
	for _, k32 := range lp.sums {
		k, sp := int(k32), lp.spans[k32]
		part, ref := lp.partOf(k)
		part.Value = max(part.Value, p.summaryValue(p.l1[sp.from].GetSummary(), &lp.c.ents[sp.from].words))
		lp.setPart(k, p.add(part, ref))
	}
}

// addL2 makes a part of each L2 summary, valued by the content words it
// shares with the latest user message.
func (p *planner) addL2() {
	p.l2First, p.l2Len = len(p.parts), len(p.s.snap.GetL2())
	c := p.l1p.c
	c.l2Words = resize(c.l2Words, p.l2Len)
	for i, sum := range p.s.snap.GetL2() {
		p.add(Part{Kind: PartSummary, Tokens: uint64(sum.GetTokens()), Value: p.summaryValue(sum, &c.l2Words[i])}, partRef{l2: i})
	}
}

// summaryValue values summary sum, whose record the planner keeps at
// *slot (summaryWords.sharedAt).
func (p *planner) summaryValue(sum *memoryv1.Summary, slot **summaryRec) float64 {
	if len(p.query) == 0 {
		return summaryBase
	}
	return summaryBase + summaryWeight*float64(p.l1p.c.words.sharedAt(sum, slot))/float64(len(p.query))
}

// addHits values the search hits: a hit in the older L1 raises its part's
// value, a hit in the swap becomes a recalled part (a hit offered twice
// keeps its larger value).
func (p *planner) addHits(c *Candidates) {
	hits := c.Recall[:min(len(c.Recall), MaxRecallCandidates+MaxEarlierCandidates)]
	p.prep = c.preparedFor(p.rawTok)
	var best float64
	if len(c.RecallScores) == len(c.Recall) && len(hits) > 0 {
		best = slices.Max(c.RecallScores[:len(hits)])
	}
	var promoted map[uint64]bool // nil, and no lookup cost, when none is
	if ms := p.s.snap.GetPromoted(); len(ms) > 0 {
		promoted = make(map[uint64]bool, len(ms))
		for _, m := range ms {
			promoted[m.GetSeq()] = true
		}
	}
	for r, m := range hits {
		if m == nil || promoted[m.GetSeq()] {
			continue
		}
		v := hitWeight / (1 + float64(r)/hitRankScale)
		if best > 0 {
			v = hitWeight * max(0, c.RecallScores[r]) / best / (1 + float64(r)/hitRankScale)
		}
		if c.bareAt(r, m) {
			v *= questionWeight
		}
		if sid := sessionOf(c, r); sid != "" && sid != p.s.snap.GetSessionId() {
			p.offerEarlier(r, sid, m, v)
			continue
		}
		if !p.searchable(m) {
			continue
		}
		p.offer(r, m, v)
	}
}

// searchable reports whether a hit of the session's own message m counts:
// only messages before the previous append do (the node waits until the
// projection holds them; the previous append's own messages may not be
// projected yet, and are the newest, valued by recency anyway). At this
// point of a decision the state holds the append being decided, so the
// previous append is the one before the latest.
func (p *planner) searchable(m *memoryv1.Message) bool {
	b := p.s.prevAppendFirst
	return b == 0 || m.GetSeq() < b
}

// sessionOf returns the session of recall candidate r ("" : the session's).
func sessionOf(c *Candidates, r int) string {
	if len(c.RecallSessions) != len(c.Recall) {
		return ""
	}
	return c.RecallSessions[r]
}

// offerEarlier values message m (recall candidate r) of another
// session sid at v: a recalled
// part holding a reference (the text is read again when the context is
// read, EarlierSessionText cut to text_bytes).
func (p *planner) offerEarlier(r int, sid string, m *memoryv1.Message, v float64) {
	ref := earlierRef{sid, m.GetSeq()}
	if i, ok := p.earlierPart[ref]; ok {
		p.raise(i, v)
		return
	}
	it, ok := p.prep.recallItem(r, formEarlier)
	if !ok {
		it = prepareMessage(p.tok, formEarlier, m)
	}
	if !it.ok {
		return
	}
	p.recs = append(p.recs, recalledRef{m: m, sid: sid, it: it})
	p.earlierPart[ref] = p.add(Part{Kind: PartEarlier, Tokens: uint64(it.tokens), Value: v}, partRef{l2: -1, rec: int32(len(p.recs))})
}

// offer values message m (recall candidate r) of the session at v:
// its L1 part when it is
// older than the tail, nothing when in the tail, a recalled part when it
// is in the swap only.
func (p *planner) offer(r int, m *memoryv1.Message, v float64) {
	if i := p.verbatimIndex(m.GetSeq()); i >= 0 && i < p.tail {
		p.raiseL1(i, v)
		return
	} else if i >= 0 {
		return // in the tail: shown anyway
	}
	if i, ok := p.swapPart[m.GetSeq()]; ok {
		p.raise(i, v)
		return
	}
	it, ok := p.prep.recallItem(r, formRecalled)
	if !ok {
		it = prepareMessage(p.tok, formRecalled, m)
	}
	if !it.ok {
		return
	}
	p.recs = append(p.recs, recalledRef{m: m, it: it})
	p.swapPart[m.GetSeq()] = p.add(Part{Kind: PartRecalled, Tokens: uint64(it.tokens), Value: v}, partRef{l2: -1, rec: int32(len(p.recs))})
}

func (p *planner) raise(part int, v float64) {
	if part >= 0 && v > p.parts[part].Value {
		p.parts[part].Value = v
	}
}

// verbatimIndex returns the index of the verbatim L1 message at seq, or -1.
func (p *planner) verbatimIndex(seq uint64) int {
	if c := p.l1p.c; c != nil {
		return c.verbatimAt(seq)
	}
	i, found := l1At(p.l1, seq)
	if !found || p.l1[i].GetMessage() == nil {
		return -1
	}
	return i
}

// addMemory makes a part of each scope entry the memory section could
// hold (chooseMemory: within memory_pct, split by tier when they compete).
func (p *planner) addMemory(c *Candidates, a *memoryv1.AssemblyConfig) {
	cands := c.Memory[:min(len(c.Memory), MaxMemoryCandidates)]
	var best float64
	scored := len(c.MemoryScores) == len(c.Memory)
	if scored && len(cands) > 0 {
		best = slices.Max(c.MemoryScores[:len(cands)])
	}
	// An entry's value is its first candidate's (of any tier: the later
	// ones neither count nor rank); first[r] is that candidate of r's
	// entry.
	var value [MaxMemoryCandidates]float64
	first := c.memoryFirsts(&p.s.planCache().memFirst)
	top := 0
	for r := range cands {
		if first[r] != int32(r) {
			continue
		}
		v := memoryWeight / (1 + float64(r)/5)
		if scored {
			if s := c.MemoryScores[r]; s > 0 && best > 0 {
				v = memoryWeight * s / best
			} else {
				v = memoryTopWeight / (1 + float64(top))
				top++
			}
		}
		value[r] = v
	}
	p.memCands, p.memValue, p.cands = cands, value, c
	p.mems = chooseMemoryFrom(cands, c.memoryCounts(p.rawTok), first, a, p.s.sectionCap(a.GetMemoryPct()), p.tok, p.mems)
	for j, m := range p.mems {
		p.add(Part{Kind: PartMemory, Tokens: uint64(m.tokens), Value: value[first[m.from]]}, partRef{l2: -1, mem: int32(j + 1)})
	}
}

// BareQuestion reports whether m is a user message that only asks: one
// sentence ending with '?' and no digit. An earlier question is worth
// little to the next one; a question that states a fact ("I moved to Porto
// in 2023; what's good there?") is not bare.
func BareQuestion(m *memoryv1.Message) bool {
	if m.GetRole() != memoryv1.Role_ROLE_USER {
		return false
	}
	t := strings.TrimSpace(m.GetContent())
	if !strings.HasSuffix(t, "?") || strings.ContainsFunc(t, unicode.IsDigit) {
		return false
	}
	body := strings.TrimRight(t, "?")
	return !strings.ContainsAny(body, ".!?\n")
}

// byTier orders memory items task, user, global (each in the given order).
func byTier(ms []*memoryv1.MemoryItem) []*memoryv1.MemoryItem {
	var out []*memoryv1.MemoryItem
	for _, tier := range []string{TierTask, TierUser, TierGlobal} {
		for _, m := range ms {
			if m.GetTier() == tier {
				out = append(out, m)
			}
		}
	}
	return out
}

// trimView returns the ContextAssembled that drops planned items until the
// context fits the budget again (nil: it fits, or there is no plan): a
// later command (an assistant reply, a tool result, a Kernel change) adds
// to the tail, which is always shown. Dropped first: L2 summaries, then
// the older L1 entries (whole tool-call groups), then recalled messages,
// each oldest first, then memory entries, last first. Without any planned
// item the context is at most PlannedTokens, which compression keeps
// within the budget.
func (s *State) trimView() *memoryv1.ContextAssembled {
	a := s.snap.GetAssembled()
	budget := s.Budget()
	view := s.ViewTokens()
	if !a.GetPlanned() || view <= budget {
		return nil
	}
	over := view - budget
	out := proto.Clone(a).(*memoryv1.Assembled)
	drop := func(n uint64) bool {
		over -= min(over, n)
		return over == 0
	}
	l2 := map[string]uint64{}
	for _, sum := range s.snap.GetL2() {
		l2[sum.GetId()] = uint64(sum.GetTokens())
	}
	for len(out.L2Ids) > 0 && over > 0 {
		drop(l2[out.L2Ids[0]])
		out.L2Ids = out.L2Ids[1:]
	}
	l1 := s.snap.GetL1()
	g := toolGroups(l1)
	for len(out.L1Seqs) > 0 && over > 0 {
		i, found := l1At(l1, out.L1Seqs[0])
		out.L1Seqs = out.L1Seqs[1:]
		if !found {
			continue
		}
		drop(uint64(entryTokens(l1[i])))
		if o := g.owner[i]; o >= 0 {
			// The rest of its tool-call group goes with it.
			for j := o; j <= g.last[o] && j < len(l1); j++ {
				first, _ := entryRange(l1[j])
				if k, ok := slices.BinarySearch(out.L1Seqs, first); ok {
					drop(uint64(entryTokens(l1[j])))
					out.L1Seqs = slices.Delete(out.L1Seqs, k, k+1)
				}
			}
		}
	}
	for len(out.Recalled) > 0 && over > 0 {
		drop(uint64(out.Recalled[0].GetTokens()))
		out.Recalled = out.Recalled[1:]
	}
	for len(out.Memory) > 0 && over > 0 {
		drop(uint64(out.Memory[len(out.Memory)-1].GetTokens()))
		out.Memory = out.Memory[:len(out.Memory)-1]
	}
	trimWhy(out.Why, len(out.Recalled), len(out.Memory))
	return &memoryv1.ContextAssembled{Sections: out}
}

// fitView emits trimView's event on s (in a decision's simulation) when
// the context no longer fits.
func (s *State) fitView(env Env) ([]proto.Message, error) {
	var out []proto.Message
	// A trim can leave a message after entries it hides, which then shows
	// its day (dated.go): trimmed again when that mark does not fit and
	// the last trim made the view smaller (without day marks: one trim,
	// as ever).
	var last uint64
	for i := range maxTrims {
		view := s.ViewTokens()
		if i > 0 && (s.tok.marks == 0 || view >= last) {
			break
		}
		last = view
		ev := s.trimView()
		if ev == nil {
			break
		}
		if err := s.applyEvent(ev, env.NowUnixNano); err != nil {
			return nil, fmt.Errorf("segmented: decided an inconsistent event: %w", err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// maxTrims bounds the trims of one fitView (each frees what it finds over
// the budget; only a day mark it uncovers can leave more).
const maxTrims = 8
