package segmented

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/utf8cut"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// The context assembler (DESIGN §5a): at each append holding a user
// message, a session with AssemblyConfig fills two bounded sections from
// candidates the node found for that message outside the actor:
//
//   - recalled: messages of the session's swap (evicted or summarized
//     away), best first, that are not verbatim in L1 or promoted;
//   - memory: scope entries (agent, session, user, project, app, global),
//     each tier within its share of the memory section.
//
// DecideAppendWith records the choice in a ContextAssembled event before
// the compression events, so compression makes room for the sections and
// the budget invariant holds; replay applies the event and never searches.
// The sections are replaced at the next user message and cleared by
// clear recalled (the recalled section). When an append does not fit the
// budget with the sections, it is decided again without them: nothing
// recalled ever pushes the budget or makes an append fail.

// Assembly defaults and limits.
const (
	DefaultRecallPct = 10
	DefaultMemoryPct = 10
	DefaultTaskPct   = 40
	DefaultUserPct   = 40
	DefaultGlobalPct = 20
	// MaxAssemblyPct bounds recall_pct + memory_pct.
	MaxAssemblyPct = 50
	// MaxSectionTokens caps each section whatever its share: the sections
	// are recorded in the log at each user message, so a 128k budget must
	// not write 25k tokens of text per user message.
	MaxSectionTokens = 4096
	// MaxRecallCandidates and MaxMemoryCandidates bound the candidates of
	// one append (more are ignored).
	MaxRecallCandidates = 50
	MaxMemoryCandidates = 60
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
type Candidates struct {
	Recall []*memoryv1.Message
	Memory []*memoryv1.MemoryItem
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
	if r.RecallPct+r.MemoryPct > MaxAssemblyPct {
		return badRequest("assembly", "recall_pct (%d) + memory_pct (%d) must be <= %d", r.RecallPct, r.MemoryPct, MaxAssemblyPct)
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

// decideSections chooses the sections for the user message m (already in
// the simulated state) from c.
func (s *State) decideSections(m *memoryv1.Message, c *Candidates, env Env) *memoryv1.Assembled {
	a := s.Assembly()
	out := &memoryv1.Assembled{ForMessageId: m.GetId(), ForSeq: m.GetSeq()}
	if c == nil {
		return out
	}
	if capTokens := s.sectionCap(a.GetRecallPct()); capTokens > 0 {
		out.Recalled = s.chooseRecalled(c.Recall, capTokens, env.Tokenizer)
	}
	if capTokens := s.sectionCap(a.GetMemoryPct()); capTokens > 0 {
		out.Memory = chooseMemory(c.Memory, a, capTokens, env.Tokenizer)
	}
	return out
}

// sectionCap is a section's room: pct of the budget, at most
// MaxSectionTokens.
func (s *State) sectionCap(pct uint32) uint64 {
	return min(s.Budget()*uint64(pct)/100, MaxSectionTokens)
}

// sameSections reports whether a and b hold the same items (the user
// message they were chosen for aside): then no event is needed.
func sameSections(a, b *memoryv1.Assembled) bool {
	return slices.EqualFunc(a.GetRecalled(), b.GetRecalled(), func(x, y *memoryv1.RecalledItem) bool { return proto.Equal(x, y) }) &&
		slices.EqualFunc(a.GetMemory(), b.GetMemory(), func(x, y *memoryv1.MemoryItem) bool { return proto.Equal(x, y) })
}

func (s *State) chooseRecalled(cands []*memoryv1.Message, capTokens uint64, tok Tokenizer) []*memoryv1.RecalledItem {
	// By seq: a client may reuse the id of an archived message. L1 is
	// looked up, not scanned: it holds up to the whole budget of messages.
	present := map[uint64]bool{}
	for _, p := range s.snap.GetPromoted() {
		present[p.GetSeq()] = true
	}
	var out []*memoryv1.RecalledItem
	var used uint64
	for _, m := range cands[:min(len(cands), MaxRecallCandidates)] {
		if m == nil || present[m.GetSeq()] || s.verbatimInL1(m.GetSeq()) {
			continue
		}
		present[m.GetSeq()] = true
		room := capTokens - used
		if room < minItemTokens {
			break
		}
		text, tokens, ok := fitItem(tok, recalledText(m), room)
		if !ok {
			continue
		}
		used += uint64(tokens)
		out = append(out, &memoryv1.RecalledItem{MessageId: m.GetId(), Seq: m.GetSeq(), Role: m.GetRole(), Text: text, Tokens: tokens})
	}
	// In conversation order: the LLM reads them as excerpts of the past.
	slices.SortFunc(out, func(x, y *memoryv1.RecalledItem) int { return cmp.Compare(x.Seq, y.Seq) })
	return out
}

// verbatimInL1 reports whether the message at seq is verbatim in L1. L1 is
// in seq order (an entry's seq is its message's, or its summary's
// first_seq), so this is a binary search.
func (s *State) verbatimInL1(seq uint64) bool {
	l1 := s.snap.GetL1()
	i, found := slices.BinarySearchFunc(l1, seq, func(e *memoryv1.L1Entry, seq uint64) int {
		first := e.GetSummary().GetFirstSeq()
		if m := e.GetMessage(); m != nil {
			first = m.GetSeq()
		}
		return cmp.Compare(first, seq)
	})
	return found && l1[i].GetMessage() != nil
}

// chooseMemory takes the candidates in order while their tier has room
// (memory × tier share), then gives what the tiers left unused to the
// candidates not taken, in order. A scope and key is taken once.
func chooseMemory(cands []*memoryv1.MemoryItem, a *memoryv1.AssemblyConfig, capTokens uint64, tok Tokenizer) []*memoryv1.MemoryItem {
	tierCap := map[string]uint64{
		TierTask:   capTokens * uint64(a.GetTaskPct()) / 100,
		TierUser:   capTokens * uint64(a.GetUserPct()) / 100,
		TierGlobal: capTokens * uint64(a.GetGlobalPct()) / 100,
	}
	var uniq []*memoryv1.MemoryItem
	seen := map[string]bool{}
	for _, c := range cands[:min(len(cands), MaxMemoryCandidates)] {
		id := c.GetScope() + "\x00" + c.GetKey()
		if _, ok := tierCap[c.GetTier()]; !ok || seen[id] {
			continue
		}
		seen[id] = true
		uniq = append(uniq, c)
	}
	taken := make([]*memoryv1.MemoryItem, len(uniq))
	tierUsed := map[string]uint64{}
	var used uint64
	take := func(i int, room uint64) {
		c := uniq[i]
		text, tokens, ok := fitItem(tok, memoryText(c), room)
		if !ok {
			return
		}
		taken[i] = &memoryv1.MemoryItem{Scope: c.GetScope(), Key: c.GetKey(), Version: c.GetVersion(), Text: text, Tokens: tokens, Tier: c.GetTier()}
		tierUsed[c.GetTier()] += uint64(tokens)
		used += uint64(tokens)
	}
	for i, c := range uniq {
		if limit := tierCap[c.GetTier()]; tierUsed[c.GetTier()] < limit {
			take(i, min(limit-tierUsed[c.GetTier()], capTokens-used))
		}
	}
	for i := range uniq {
		if taken[i] == nil && used < capTokens {
			take(i, capTokens-used)
		}
	}
	var out []*memoryv1.MemoryItem
	for _, tier := range []string{TierTask, TierUser, TierGlobal} {
		for _, m := range taken {
			if m != nil && m.Tier == tier {
				out = append(out, m)
			}
		}
	}
	return out
}

// fitItem returns text, trimmed when needed, within room tokens (counted as
// an item: text plus MessageOverheadTokens); ok false when fewer than
// minItemTokens would be left.
func fitItem(tok Tokenizer, text string, room uint64) (string, uint32, bool) {
	// A token holds at least one byte: text that short fits whatever it
	// counts; only count what may.
	if uint64(len(text))+MessageOverheadTokens <= room || uint64(len(text)) <= maxTrimBytesPerToken*room {
		if n := textTokens(tok, text); uint64(n) <= room {
			return text, n, true
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
	n := textTokens(tok, t)
	if uint64(n) > room {
		return "", 0, false
	}
	return t, n, true
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
	var b strings.Builder
	fmt.Fprintf(&b, "Recalled %s (%s, turn %d", m.GetId(), roleName(m.GetRole()), m.GetTurn())
	at := m.GetSaidUnixNano()
	if at == 0 {
		at = m.GetCreatedUnixNano()
	}
	if at > 0 {
		b.WriteString(", ")
		b.WriteString(time.Unix(0, at).UTC().Format(time.DateOnly))
	}
	b.WriteString("): ")
	b.WriteString(m.GetContent())
	for _, c := range m.GetToolCalls() {
		fmt.Fprintf(&b, "\ncall %s(%s)", c.GetName(), c.GetArguments())
	}
	return b.String()
}

// memoryText is a memory entry as the context sends it.
func memoryText(m *memoryv1.MemoryItem) string {
	return fmt.Sprintf("Memory %s %s (v%d): %s", m.GetScope(), m.GetKey(), m.GetVersion(), m.GetText())
}

func sectionsEmpty(a *memoryv1.Assembled) bool {
	return len(a.GetRecalled()) == 0 && len(a.GetMemory()) == 0
}

func (s *State) applyAssembled(e *memoryv1.ContextAssembled) {
	sec := e.GetSections()
	if sectionsEmpty(sec) {
		sec = nil
	}
	s.snap.Assembled = sec
	s.tok.recalled, s.tok.memory = 0, 0
	for _, r := range sec.GetRecalled() {
		s.tok.recalled += uint64(r.GetTokens())
	}
	for _, m := range sec.GetMemory() {
		s.tok.memory += uint64(m.GetTokens())
	}
}
