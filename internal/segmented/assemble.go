package segmented

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/utf8cut"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// The context assembler: at each append holding a user
// message, a session with AssemblyConfig allocates its whole budget for
// that message (plan.go, allocate.go) among candidates the node found
// outside the actor and the session's own older turns and summaries:
//
//   - recalled: messages of the session's swap (evicted or summarized
//     away), with the turns next to them;
//   - memory: scope entries (agent, session, user, project, app, global);
//   - the L1 entries older than the verbatim tail, and the summaries of
//     L1 and L2: shown when they earn their room, hidden otherwise.
//
// DecideAppendWith records the outcome in a ContextAssembled event (the
// sections and the plan: which L1 and L2 entries show), so replay applies
// it and never searches. The session's own layers stay within the budget
// by compression as before; the plan decides what of them the context
// shows, and the context (what Context sends) stays within the budget
// too: a later command that would overflow it drops planned items
// (trimView). The sections are replaced at the next user message and the
// recalled one is cleared by clear recalled.

// Assembly defaults and limits.
const (
	// DefaultRecallPct and DefaultMemoryPct cap the recalled and memory
	// sections (percent of the budget); within the caps every part
	// competes for the same tokens (Allocate).
	DefaultRecallPct = 60
	DefaultMemoryPct = 25
	DefaultTaskPct   = 40
	DefaultUserPct   = 40
	DefaultGlobalPct = 20
	// MaxAssemblyPct bounds recall_pct and memory_pct each.
	MaxAssemblyPct = 100
	// MaxSectionTokens caps the memory section whatever its share (and
	// MaxRecalledTokens the recalled one): the sections are recorded in the
	// log at each user message, so a 128k budget must not write 25k tokens
	// of text per user message.
	MaxSectionTokens = 4096
	// MaxRecallCandidates and MaxMemoryCandidates bound the candidates of
	// one append (more are ignored).
	MaxRecallCandidates = 100
	MaxMemoryCandidates = 60
	// MaxEarlierCandidates bounds the candidates of one append from other
	// sessions (besides MaxRecallCandidates of the session's own).
	MaxEarlierCandidates = 400
	// minItemTokens: an item that fits only when trimmed below this is
	// left out.
	minItemTokens = 24
	// maxTrimBytesPerToken bounds the text counted for an item of room
	// tokens: longer text is cut to this many bytes per token first (a
	// token of ordinary text is 3-5 bytes).
	maxTrimBytesPerToken = 12
)

// Memory tiers of MemoryItem.tier.
const (
	TierTask   = "task"   // the session's agent (private) and session scopes
	TierUser   = "user"   // user, project and app scopes
	TierGlobal = "global" // the global scope
)

// Layer names of the assembled sections in ContextMessage.layer.
const (
	LayerMemory   = "memory"
	LayerRecalled = "recalled"
)

// Candidates are what the node found for the latest user message of an
// append, best first: Recall from the session's swap (messages as
// stored), Memory from the scopes the caller may read (tokens unset; the
// session counts them). nil: the node found nothing (or did not look).
//
// RecallScores and MemoryScores, when as long as Recall and Memory, are
// the search scores (a memory candidate of score 0 did not match: a
// scope's most important or recent entry); without them the rank decides.
//
// RecallSessions, when as long as Recall, names the session of each recall
// candidate: "" (or the session's own id) for the session's own messages,
// another id for a message of another session of the same user (or agent),
// which the recalled section records by reference.
type Candidates struct {
	Recall         []*memoryv1.Message
	RecallScores   []float64
	RecallSessions []string
	Memory         []*memoryv1.MemoryItem
	MemoryScores   []float64
	// Summaries are the session's archived L2 summaries that match the
	// user message, best first (SummaryScores beside them, or nil): offered
	// as recalled items (archived.go).
	Summaries     []*memoryv1.Summary
	SummaryScores []float64
	// prep: the candidates rendered and counted (Prepare); nil: the
	// decision renders and counts them.
	prep *prepared
}

// What the node asks a session search for and offers of it (// tens of candidates): RecallSearched hits, of which OfferRecall keeps at
// most RecallOffered.
const (
	RecallSearched = 100
	RecallOffered  = 60
)

// OfferRecall returns the candidates the node offers of a session search's
// hits, best first (scores beside them, or nil): earlier user questions
// that state no fact are dropped (BareQuestion: asked again, they crowd out
// the turns that answer them), then at most RecallOffered are kept. The
// node and the benchmark both call it, so they offer the same.
func OfferRecall(hits []*memoryv1.Message, scores []float64) ([]*memoryv1.Message, []float64) {
	out, outScores, _ := OfferRecallFrom(hits, scores, nil, 0)
	return out, outScores
}

// OfferRecallFrom is OfferRecall for hits of several sessions: sessions,
// when as long as hits, names each hit's session ("" : the session's own)
// and is filtered alike; of other sessions' hits at most earlier are kept
// (besides RecallOffered of the session's own).
func OfferRecallFrom(hits []*memoryv1.Message, scores []float64, sessions []string, earlier int) ([]*memoryv1.Message, []float64, []string) {
	var out []*memoryv1.Message
	var outScores []float64
	var outSessions []string
	own, others := 0, 0
	for i, m := range hits {
		if own == RecallOffered && others >= earlier {
			break
		}
		if BareQuestion(m) {
			continue
		}
		if len(sessions) == len(hits) && sessions[i] != "" {
			if others >= earlier {
				continue
			}
			others++
		} else {
			if own == RecallOffered {
				continue
			}
			own++
		}
		out = append(out, m)
		if len(scores) == len(hits) {
			outScores = append(outScores, scores[i])
		}
		if len(sessions) == len(hits) {
			outSessions = append(outSessions, sessions[i])
		}
	}
	return out, outScores, outSessions
}

func resolveAssembly(a *memoryv1.AssemblyConfig) *memoryv1.AssemblyConfig {
	if a == nil {
		a = &memoryv1.AssemblyConfig{Recall: true, Memory: true}
	} else {
		a = proto.Clone(a).(*memoryv1.AssemblyConfig)
	}
	a.RecallPct = orDefault(a.RecallPct, DefaultRecallPct)
	a.MemoryPct = orDefault(a.MemoryPct, DefaultMemoryPct)
	if a.TaskPct+a.UserPct+a.GlobalPct == 0 {
		a.TaskPct, a.UserPct, a.GlobalPct = DefaultTaskPct, DefaultUserPct, DefaultGlobalPct
	}
	if !a.Recall {
		a.RecallPct = 0
	}
	if !a.Memory {
		a.MemoryPct = 0
	}
	return a
}

func validateAssembly(a *memoryv1.AssemblyConfig) error {
	if a == nil {
		return nil
	}
	r := resolveAssembly(a)
	if r.RecallPct > MaxAssemblyPct {
		return badRequest("assembly.recall_pct", "must be <= %d, got %d", MaxAssemblyPct, r.RecallPct)
	}
	if r.MemoryPct > MaxAssemblyPct {
		return badRequest("assembly.memory_pct", "must be <= %d, got %d", MaxAssemblyPct, r.MemoryPct)
	}
	if sum := a.TaskPct + a.UserPct + a.GlobalPct; sum != 0 && sum != 100 {
		return badRequest("assembly.task_pct", "task_pct + user_pct + global_pct must be 100 (or all 0 for 40/40/20), got %d", sum)
	}
	return nil
}

// Assembly returns the session's assembler settings (nil: off).
func (s *State) Assembly() *memoryv1.AssemblyConfig { return s.snap.GetConfig().GetAssembly() }

// Assembled returns the recalled and memory sections (shared: read-only).
func (s *State) Assembled() *memoryv1.Assembled { return s.snap.GetAssembled() }

// WantsCandidates reports whether an append of req would use candidates:
// the session assembles its context and req holds a user message. The
// node searches only then.
func (s *State) WantsCandidates(req *memoryv1.AppendRequest) bool {
	if !s.assembles() {
		return false
	}
	return slices.ContainsFunc(req.GetMessages(), func(m *memoryv1.MessageInput) bool { return m.GetRole() == memoryv1.Role_ROLE_USER })
}

// assembles reports whether the session assembles its context (a recall
// or a memory share).
func (s *State) assembles() bool {
	a := s.Assembly()
	return a != nil && a.RecallPct+a.MemoryPct > 0
}

// decideSections chooses the sections and the plan for the user message m
// (already in the simulated state) from c.
func (s *State) decideSections(m *memoryv1.Message, c *Candidates, env Env) *memoryv1.Assembled {
	plan := s.plan
	if s.planWith != nil {
		plan = func(m *memoryv1.Message, c *Candidates, env Env) *memoryv1.Assembled { return s.planWith(s, m, c, env) }
	}
	// The day marks the plan makes the context show (dated.go) are not
	// among its parts: room for them is kept with the layers the planner
	// takes as given, as many as the context shows now, and the message
	// is planned again when its plan needs more (a session without said
	// times has none, and is planned once as ever).
	reserve := s.tok.marks
	s.tok.promoted += reserve
	out := plan(m, c, env)
	s.tok.promoted -= reserve
	marked, marks := s.planMarks(out)
	if marks > reserve && out.GetPlanned() {
		s.tok.promoted += marks
		out = plan(m, c, env)
		s.tok.promoted -= marks
		return out
	}
	// Applying the ContextAssembled of out, next, finds these marks.
	s.marksMemo = marksMemo{plan: out, marked: marked, tokens: marks}
	return out
}

// sectionCap is a section's room: pct of the budget, at most
// MaxSectionTokens.
func (s *State) sectionCap(pct uint32) uint64 {
	return min(s.Budget()*uint64(pct)/100, MaxSectionTokens)
}

// sameSections reports whether a and b hold the same items and plan (the
// user message they were chosen for aside): then no event is needed.
func sameSections(a, b *memoryv1.Assembled) bool {
	return a.GetPlanned() == b.GetPlanned() && a.GetTailSeq() == b.GetTailSeq() &&
		slices.Equal(a.GetL1Seqs(), b.GetL1Seqs()) && slices.Equal(a.GetL2Ids(), b.GetL2Ids()) &&
		slices.EqualFunc(a.GetRecalled(), b.GetRecalled(), func(x, y *memoryv1.RecalledItem) bool { return proto.Equal(x, y) }) &&
		slices.EqualFunc(a.GetMemory(), b.GetMemory(), sameMemoryItem)
}

// chooseMemory takes the candidates in order while their tier has room
// (memory × tier share), then gives what the tiers left unused to the
// candidates not taken, in order. A scope and key is taken once.
//
// counts, when not nil, holds the token count of each candidate's whole
// text (-1: unknown), as Prepare counted it.
func chooseMemory(cands []*memoryv1.MemoryItem, counts []int64, a *memoryv1.AssemblyConfig, capTokens uint64, tok Tokenizer) []*memoryv1.MemoryItem {
	var out []*memoryv1.MemoryItem
	for _, c := range chooseMemoryFrom(cands, counts, memoryFirsts(cands, nil), a, capTokens, tok, nil) {
		out = append(out, c.item())
	}
	return out
}

// memChoice is a memory candidate chooseMemory takes, as its item will
// record it (made only for the items a plan shows: item).
type memChoice struct {
	c       *memoryv1.MemoryItem // the candidate
	from    int                  // its index in the candidates
	tier    int                  // tierIndex
	tokens  uint32
	bytes   uint32
	trimmed bool
	// count is the token count of the candidate's whole text (-1:
	// unknown).
	count int64
}

func (m *memChoice) item() *memoryv1.MemoryItem {
	x := &memoryv1.MemoryItem{}
	m.fill(x, ItemKeySum(m.c))
	return x
}

// fill sets the fields of x, a new item, to m's: the key by its digest
// sum (ItemKeySum of the candidate: MemoryItem.key_sha256).
func (m *memChoice) fill(x *memoryv1.MemoryItem, sum []byte) {
	c := m.c
	x.Scope, x.KeySha256, x.Version, x.Tier = c.GetScope(), sum, c.GetVersion(), c.GetTier()
	x.TextBytes, x.Trimmed, x.Tokens = m.bytes, m.trimmed, m.tokens
}

// chooseMemoryFrom is chooseMemory, returning the choices (appended to
// buf) in the order of its items; first is memoryFirsts(cands).
func chooseMemoryFrom(cands []*memoryv1.MemoryItem, counts []int64, first []int32, a *memoryv1.AssemblyConfig, capTokens uint64, tok Tokenizer, buf []memChoice) []memChoice {
	// Tiers by index (tierIndex): no maps, it runs at every user message.
	tierCap := [3]uint64{
		capTokens * uint64(a.GetTaskPct()) / 100,
		capTokens * uint64(a.GetUserPct()) / 100,
		capTokens * uint64(a.GetGlobalPct()) / 100,
	}
	cands = cands[:min(len(cands), MaxMemoryCandidates)]
	// The first candidate of each scope and key, with its count: the
	// choices as they are taken (tokens 0: not taken).
	uniq := buf[:0]
	// taken[j]: a candidate of the entry first named by candidate j was
	// taken (one of a tier: a candidate without one is passed over).
	var taken [MaxMemoryCandidates]bool
	for i, c := range cands {
		t := tierIndex(c.GetTier())
		if t < 0 || taken[first[i]] {
			continue
		}
		taken[first[i]] = true
		n := int64(-1)
		if i < len(counts) {
			n = counts[i]
		}
		uniq = append(uniq, memChoice{c: c, from: i, tier: t, count: n})
	}
	var tierUsed [3]uint64
	var used uint64
	take := func(i int, room uint64) {
		c := uniq[i].c
		// The log keeps which text, not the text (MemoryItem.text_bytes):
		// a counted text that fits whole is not rendered.
		n, tokens, trimmed := memoryTextLen(c), uint32(uniq[i].count), false
		if k := uniq[i].count; k < 0 || !fitsWhole(n, k, room) {
			full := memoryText(c)
			text, t, ok := fitItemCounted(tok, full, k, room)
			if !ok {
				return
			}
			n, tokens = len(text), t
			if text != full {
				n, trimmed = len(strings.TrimSuffix(text, "…")), true
			}
		}
		uniq[i].tokens, uniq[i].bytes, uniq[i].trimmed = tokens, uint32(n), trimmed
		tierUsed[uniq[i].tier] += uint64(tokens)
		used += uint64(tokens)
	}
	for i, u := range uniq {
		if t := u.tier; tierUsed[t] < tierCap[t] {
			take(i, min(tierCap[t]-tierUsed[t], capTokens-used))
		}
	}
	for i := range uniq {
		if uniq[i].tokens == 0 && used < capTokens {
			take(i, capTokens-used)
		}
	}
	// By tier (task, user, global), each in candidate order; the choices
	// not taken are dropped. In place: each taken choice of the tier moves
	// up to the end of those placed, the ones it passes shift by one.
	n := 0
	for t := range 3 {
		for i := n; i < len(uniq); i++ {
			if u := uniq[i]; u.tier == t && u.tokens > 0 {
				copy(uniq[n+1:i+1], uniq[n:i])
				uniq[n] = u
				n++
			}
		}
	}
	return uniq[:n]
}

// tierIndex returns the index of a memory tier (task, user, global), or -1.
func tierIndex(tier string) int {
	switch tier {
	case TierTask:
		return 0
	case TierUser:
		return 1
	case TierGlobal:
		return 2
	}
	return -1
}

// memoryFirsts returns, for each memory candidate (at most
// MaxMemoryCandidates), the index of the first candidate naming the same
// scope and key (sameEntry), in buf.
func memoryFirsts(cands []*memoryv1.MemoryItem, buf []int32) []int32 {
	cands = cands[:min(len(cands), MaxMemoryCandidates)]
	first := resize(buf, len(cands))
	for r, m := range cands {
		first[r] = int32(r)
		for j := range r {
			if first[j] == int32(j) && sameEntry(cands[j], m) {
				first[r] = int32(j)
				break
			}
		}
	}
	return first
}

// sameEntry reports whether a and b name the same scope and key (as
// scope + "\x00" + key, which the memory section takes once).
func sameEntry(a, b *memoryv1.MemoryItem) bool {
	as, ak, bs, bk := a.GetScope(), a.GetKey(), b.GetScope(), b.GetKey()
	if as == bs {
		return ak == bk
	}
	// Scopes without a 0x00 put the first one of the joined strings where
	// they end: different scopes, different strings.
	if len(as)+len(ak) != len(bs)+len(bk) || (strings.IndexByte(as, 0) < 0 && strings.IndexByte(bs, 0) < 0) {
		return false
	}
	// Compared in place: it runs for every pair of candidates.
	at := func(s, k string, i int) byte {
		switch {
		case i < len(s):
			return s[i]
		case i == len(s):
			return 0
		}
		return k[i-len(s)-1]
	}
	for i := range len(as) + 1 + len(ak) {
		if at(as, ak, i) != at(bs, bk, i) {
			return false
		}
	}
	return true
}

// fitItem returns text, trimmed when needed, within room tokens (counted as
// an item: text plus MessageOverheadTokens); ok false when fewer than
// minItemTokens would be left.
func fitItem(tok Tokenizer, text string, room uint64) (string, uint32, bool) {
	return fitItemCounted(tok, text, -1, room)
}

// fitsWhole reports whether fitItem keeps whole a text of size bytes and
// n tokens (textTokens) in room.
func fitsWhole(size int, n int64, room uint64) bool {
	return (uint64(size)+MessageOverheadTokens <= room || uint64(size) <= maxTrimBytesPerToken*room) && uint64(n) <= room
}

// fitItemCounted is fitItem for a text whose textTokens are known (n >= 0)
// or not (n < 0).
func fitItemCounted(tok Tokenizer, text string, n int64, room uint64) (string, uint32, bool) {
	// A token holds at least one byte: text that short fits whatever it
	// counts; only count what may.
	if uint64(len(text))+MessageOverheadTokens <= room || uint64(len(text)) <= maxTrimBytesPerToken*room {
		if n < 0 {
			n = int64(textTokens(tok, text))
		}
		if uint64(n) <= room {
			return text, uint32(n), true
		}
	}
	if room < minItemTokens {
		return "", 0, false
	}
	if limit := maxTrimBytesPerToken * int(room); len(text) > limit {
		// Counting a long text to trim it to a small room is the costly
		// part: trim from a prefix that surely holds more than room tokens
		// of ordinary text.
		text = utf8cut.Prefix(text, limit)
	}
	t := trimToTokens(tok, text, int(room)-MessageOverheadTokens)
	if t == "" {
		return "", 0, false
	}
	k := textTokens(tok, t)
	if uint64(k) > room {
		return "", 0, false
	}
	return t, k, true
}

// trimToTokens returns the longest prefix of text (cut back to a space
// when one is near) plus "…" that counts at most limit tokens; "" when none
// does.
func trimToTokens(tok Tokenizer, text string, limit int) string {
	// Rune boundaries: prefix lengths in bytes.
	cuts := make([]int, 0, len(text)+1)
	for i := range text {
		cuts = append(cuts, i)
	}
	cuts = append(cuts, len(text))
	fits := func(k int) bool { return tok.Count(text[:cuts[k]]+"…") <= limit }
	lo, hi := 0, len(cuts)-1 // the longest fitting prefix is in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	end := cuts[lo]
	if sp := strings.LastIndexByte(text[:end], ' '); sp > 0 && end-sp < 24 {
		end = sp
	}
	body := strings.TrimRight(text[:end], " ")
	if body == "" {
		return ""
	}
	return body + "…"
}

// recalledText is a recalled message as the context sends it: its source
// (id, role, turn, the day it was said) and its content and tool calls.
func recalledText(m *memoryv1.Message) string {
	// Built in one allocation: it runs for every hit of every user message.
	role := roleName(m.GetRole())
	n := len("Recalled  (, turn 4294967295, 2006-01-02): ") + len(m.GetId()) + len(role) + len(m.GetContent())
	for _, c := range m.GetToolCalls() {
		n += len("\ncall ()") + len(c.GetName()) + len(c.GetArguments())
	}
	var b strings.Builder
	b.Grow(n)
	var num [32]byte
	b.WriteString("Recalled ")
	b.WriteString(m.GetId())
	b.WriteString(" (")
	b.WriteString(role)
	b.WriteString(", turn ")
	b.Write(strconv.AppendUint(num[:0], uint64(m.GetTurn()), 10))
	if at := SaidAt(m); at > 0 {
		b.WriteString(", ")
		b.Write(time.Unix(0, at).UTC().AppendFormat(num[:0], time.DateOnly))
	}
	b.WriteString("): ")
	b.WriteString(m.GetContent())
	writeCalls(&b, m.GetToolCalls())
	return b.String()
}

// writeCalls appends a recalled message's tool calls, one line each.
func writeCalls(b *strings.Builder, calls []*memoryv1.ToolCall) {
	for _, c := range calls {
		b.WriteString("\ncall ")
		b.WriteString(c.GetName())
		b.WriteString("(")
		b.WriteString(c.GetArguments())
		b.WriteString(")")
	}
}

// SaidAt is when m was said: its said_unix_nano (imported history), else
// when it was appended; 0 when neither is known.
func SaidAt(m *memoryv1.Message) int64 {
	if at := m.GetSaidUnixNano(); at != 0 {
		return at
	}
	return m.GetCreatedUnixNano()
}

// EarlierSessionText is a message of another session as the recalled
// section shows it: the day it was said and that it comes from an earlier
// session, who said it, then its content and tool calls
// ("[2023-05-08 earlier session, user Ana] …": 12 tokens of framing, a
// fifth of an ordinary turn). The text is rendered again from the message
// whenever the context is read (the log keeps a reference), so it depends
// on the message alone.
func EarlierSessionText(m *memoryv1.Message) string {
	var b strings.Builder
	b.WriteString("[")
	if at := SaidAt(m); at > 0 {
		b.WriteString(time.Unix(0, at).UTC().Format(time.DateOnly))
		b.WriteString(" ")
	}
	b.WriteString("earlier session, ")
	writeSaid(&b, m)
	return b.String()
}

// EarlierContinuedText is a message of another session shown under the
// previous recalled item's header (RecalledItem.continued: the same
// session and day): who said it, then its content and tool calls
// ("[user Ana] …": 3 tokens of framing where the header takes 13).
func EarlierContinuedText(m *memoryv1.Message) string {
	var b strings.Builder
	b.WriteString("[")
	writeSaid(&b, m)
	return b.String()
}

// writeSaid appends who said m, "] ", then its content and tool calls:
// the end of both forms of an earlier session's message.
func writeSaid(b *strings.Builder, m *memoryv1.Message) {
	b.WriteString(roleName(m.GetRole()))
	if n := m.GetName(); n != "" {
		b.WriteString(" ")
		b.WriteString(n)
	}
	b.WriteString("] ")
	b.WriteString(m.GetContent())
	writeCalls(b, m.GetToolCalls())
}

// earlierText is the text recalled item ref of another session shows of
// message m before any cut: under its own header, or continued.
func earlierText(ref *memoryv1.RecalledItem, m *memoryv1.Message) string {
	if ref.GetContinued() {
		return EarlierContinuedText(m)
	}
	return EarlierSessionText(m)
}

// memoryText is a memory entry as the context sends it.
func memoryText(m *memoryv1.MemoryItem) string { return MemoryText(m, m.GetText()) }

// memoryTextLen is len(memoryText(m)), without rendering it.
func memoryTextLen(m *memoryv1.MemoryItem) int {
	var num [20]byte
	return len("Memory ") + len(" ") + len(" (v") + len("): ") + len(m.GetScope()) + len(m.GetKey()) + len(strconv.AppendUint(num[:0], m.GetVersion(), 10)) + len(m.GetText())
}

// MemoryText is the text the context shows for memory item m whose entry
// version holds value.
func MemoryText(m *memoryv1.MemoryItem, value string) string {
	return memoryTextOf(m, m.GetKey(), value)
}

// memoryTextOf is MemoryText of item m whose key reads key.
func memoryTextOf(m *memoryv1.MemoryItem, key, value string) string {
	return "Memory " + m.GetScope() + " " + key + " (v" + strconv.FormatUint(m.GetVersion(), 10) + "): " + value
}

// sectionsEmpty reports whether a holds no section and no plan.
func sectionsEmpty(a *memoryv1.Assembled) bool {
	return len(a.GetRecalled()) == 0 && len(a.GetMemory()) == 0 && !a.GetPlanned()
}

func (s *State) applyAssembled(e *memoryv1.ContextAssembled) {
	sec := e.GetSections()
	if sectionsEmpty(sec) {
		sec = nil
	}
	s.snap.Assembled = sec
	s.tok.shownL1, s.tok.shownL2 = s.countShown()
	s.tok.recalled, s.tok.memory = 0, 0
	for _, r := range sec.GetRecalled() {
		s.tok.recalled += uint64(r.GetTokens())
	}
	for _, m := range sec.GetMemory() {
		s.tok.memory += uint64(m.GetTokens())
	}
}
