package segmented

import (
	"cmp"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// Env carries what a decision may depend on besides the state: the time and
// the tokenizer/summarizer. Decide* record every value they take from Env in
// the events, so Apply never needs it.
type Env struct {
	NowUnixNano int64
	Tokenizer   Tokenizer
	Summarizer  Summarizer // nil = Extractive{}
	// Libraries reads pattern libraries (nil: a session naming one cannot
	// be created, and a session's libraries are not refreshed).
	Libraries LibrarySource
}

func (e Env) summarizer() Summarizer {
	if e.Summarizer == nil {
		return Extractive{}
	}
	return e.Summarizer
}

// Meta describes the stored batch being applied.
type Meta struct {
	CommandID    string
	Version      uint64 // aggregate version after the batch; must increase
	Seq          uint64 // stream sequence of the batch
	TimeUnixNano int64
	// Digest is the command's request digest (EventBatch.command_digest),
	// kept in recent_commands beside its id (nil: none recorded).
	Digest []byte
}

// MaxRecentCommands bounds SessionSnapshot.recent_commands.
const MaxRecentCommands = 64

// State is one session aggregate: a *memoryv1.SessionSnapshot plus derived
// token totals and indexes (never stored in the snapshot). It has a single
// owner (the session actor) and no locks; reads such as Context fill a
// cache and Decide* simulate their events on the state itself (rolled back
// before they return), so even reads must not run concurrently with each
// other or with Apply.
//
// Apply and the simulations of Decide* change the state in place inside a
// transaction that can be rolled back in O(changes): see txn for the rule
// they follow. Nested messages are never modified, only replaced, so
// events, replies and snapshots may share them with the state.
type State struct {
	snap *memoryv1.SessionSnapshot // nil: no session yet

	// Derived token totals per layer, maintained by applyEvent and
	// recomputed (recount) only by FromSnapshot.
	tok totals
	// Derived indexes, maintained by Apply and computed from scratch only
	// by FromSnapshot; nil = not built yet (built on first use).
	idx *indexes
	tx  txn

	ctxCache *memoryv1.ContextReply
	// marked: the seqs of the L1 messages the context shows with a day
	// mark they do not store (dated.go), in order. Replaced whole, never
	// changed in place (a rollback restores it).
	marked     []uint64
	marksMemo  marksMemo
	ctxVersion uint64
	// plans is what the planner keeps between user messages (plan_cache.go),
	// nil until the first plan.
	plans *planCache
	// planWith, when set (by tests), plans instead of plan: the reference
	// planner the incremental one is checked against.
	planWith func(s *State, m *memoryv1.Message, c *Candidates, env Env) *memoryv1.Assembled
	// prevAppendFirst is, during an append's decision, the snapshot's
	// last_append_first_seq before it (planner.searchable); not state.
	prevAppendFirst uint64
}

// totals are the tokens of each layer.
type totals struct {
	rom, pendingRom uint64
	kernel, l2      uint64
	promoted, l1    uint64
	// recalled and memory: the assembled sections (assemble.go).
	recalled, memory uint64
	// shownL1 and shownL2: of l1 and l2, what the plan shows (shown.go).
	shownL1, shownL2 uint64
	// marks: the tokens of the day marks the context adds (dated.go).
	marks uint64
}

// New returns a State with no session (Exists() == false).
func New() *State { return &State{idx: newIndexes()} }

// Clone returns an independent copy of s (one deep clone, where
// FromSnapshot(s.Snapshot()) makes two).
func (s *State) Clone() *State { return FromSnapshot(s.snap) }

// FromSnapshot returns a State holding a deep clone of snap (nil = New()).
func FromSnapshot(snap *memoryv1.SessionSnapshot) *State {
	if snap != nil {
		snap = proto.Clone(snap).(*memoryv1.SessionSnapshot)
	}
	return FromOwnedSnapshot(snap)
}

// FromOwnedSnapshot is FromSnapshot without the clone: the State takes snap
// over, and the caller must not use it afterwards (a snapshot just
// unmarshalled for an activation: the clone was a third of its cost).
func FromOwnedSnapshot(snap *memoryv1.SessionSnapshot) *State {
	s := &State{snap: snap}
	if snap != nil {
		s.recount()
	}
	s.idx = buildIndexes(s.snap)
	return s
}

// index returns the indexes, building them when a State was made without.
// Never called inside a transaction.
func (s *State) index() *indexes {
	if s.idx == nil {
		s.idx = buildIndexes(s.snap)
	}
	return s.idx
}

// Snapshot returns a deep clone of the state (nil when no session exists).
// Marshalled with proto.MarshalOptions{Deterministic: true}, equal states
// give equal bytes.
func (s *State) Snapshot() *memoryv1.SessionSnapshot {
	if s.snap == nil {
		return nil
	}
	return proto.Clone(s.snap).(*memoryv1.SessionSnapshot)
}

// MarshalSnapshot is o.Marshal(s.Snapshot()) without the deep clone.
func (s *State) MarshalSnapshot(o proto.MarshalOptions) ([]byte, error) {
	return o.Marshal(s.snap)
}

// Exists reports whether the session has been created.
func (s *State) Exists() bool { return s.snap != nil }

// Version is the aggregate version (0 before creation).
func (s *State) Version() uint64 { return s.snap.GetVersion() }

// LastSeq is the stream sequence of the last applied batch.
func (s *State) LastSeq() uint64 { return s.snap.GetLastSeq() }

// Status is the lifecycle status (UNSPECIFIED before creation).
func (s *State) Status() memoryv1.SessionStatus { return s.snap.GetStatus() }

// Turn is the number of user messages appended so far.
func (s *State) Turn() uint32 { return s.snap.GetTurn() }

// Owner is the session's user and agent ids (who may reach it).
func (s *State) Owner() (userID, agentID string) { return s.snap.GetUserId(), s.snap.GetAgentId() }

// SessionID returns the session id ("" before creation).
func (s *State) SessionID() string { return s.snap.GetSessionId() }

// Budget is max_context_tokens - reserved_output_tokens.
func (s *State) Budget() uint64 { return budgetOf(s.snap.GetConfig()) }

// UsedTokens is what Context sends: ROM, Kernel, promoted and the
// sections, and of L1 and L2 what the allocation plan shows (all of them
// without a plan).
func (s *State) UsedTokens() uint64 {
	t := &s.tok
	l1, l2 := s.shownTokens()
	return t.rom + t.kernel + t.promoted + t.recalled + t.memory + l1 + l2
}

// PlannedTokens is the session's own layers — ROM, Kernel, L2, promoted,
// L1 — with the ROM counted as the larger of the active and the pending
// ROM (so activating a pending ROM at the next turn never overflows), and
// the sections of an assembly without a plan (stored before the
// allocation). Compression keeps PlannedTokens within the budget; the plan
// keeps ViewTokens within it.
func (s *State) PlannedTokens() uint64 {
	t := &s.tok
	n := max(t.rom, t.pendingRom) + t.kernel + t.l2 + t.promoted + t.l1
	if !s.snap.GetAssembled().GetPlanned() {
		n += t.recalled + t.memory + t.marks
	}
	return n
}

// ViewTokens is UsedTokens with the ROM counted as PlannedTokens counts
// it: what the context may send at the next turn.
func (s *State) ViewTokens() uint64 {
	t := &s.tok
	l1, l2 := s.shownTokens()
	return max(t.rom, t.pendingRom) + t.kernel + t.promoted + t.recalled + t.memory + l1 + l2
}

// shownTokens is the tokens of the L1 and L2 entries the context shows.
func (s *State) shownTokens() (l1, l2 uint64) {
	if !s.snap.GetAssembled().GetPlanned() {
		return s.tok.l1 + s.tok.marks, s.tok.l2
	}
	return s.tok.shownL1 + s.tok.marks, s.tok.shownL2
}

// showsL2 reports whether the plan a shows the L2 summary sum (every one
// without a plan).
func showsL2(a *memoryv1.Assembled, sum *memoryv1.Summary) bool {
	return !a.GetPlanned() || slices.Contains(a.GetL2Ids(), sum.GetId())
}

// showsL1 reports whether the plan a shows the L1 entry e: at or after the
// tail, or chosen.
func showsL1(a *memoryv1.Assembled, e *memoryv1.L1Entry) bool {
	if !a.GetPlanned() {
		return true
	}
	first, _ := entryRange(e)
	if first >= a.GetTailSeq() {
		return true
	}
	_, ok := slices.BinarySearch(a.GetL1Seqs(), first)
	return ok
}

// CommandWindow is the stream sequence of the oldest command LookupCommand
// still finds, and whether the window holds every command the aggregate
// stored (then a miss means "never stored"; otherwise older commands are
// looked up in the projection's command index).
func (s *State) CommandWindow() (oldestSeq uint64, complete bool) {
	if s.snap == nil || len(s.snap.RecentCommands) == 0 {
		return 0, s.Version() == 0
	}
	return s.snap.RecentCommands[0].GetSeq(), uint64(len(s.snap.RecentCommands)) >= s.snap.GetVersion()
}

// LookupCommand returns the result of a recently applied command (the last
// MaxRecentCommands), to answer a retried command idempotently.
func (s *State) LookupCommand(commandID string) (*memoryv1.CommandResult, bool) {
	if commandID == "" || s.snap == nil {
		return nil, false
	}
	for i := len(s.snap.RecentCommands) - 1; i >= 0; i-- {
		if c := s.snap.RecentCommands[i]; c.GetCommandId() == commandID {
			return proto.Clone(c).(*memoryv1.CommandResult), true
		}
	}
	return nil, false
}

// StateValue returns the value of a "session:" key.
func (s *State) StateValue(key string) ([]byte, bool) {
	if s.snap == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(s.snap.SessionState, key, func(e *memoryv1.StateEntry, k string) int {
		return strings.Compare(e.GetKey(), k)
	})
	if !ok {
		return nil, false
	}
	return slices.Clone(s.snap.SessionState[i].GetValue()), true
}

// StateEntries returns the "session:" keys and values, sorted by key.
func (s *State) StateEntries() []*memoryv1.StateEntry {
	out := make([]*memoryv1.StateEntry, 0, len(s.snap.GetSessionState()))
	for _, e := range s.snap.GetSessionState() {
		out = append(out, proto.Clone(e).(*memoryv1.StateEntry))
	}
	return out
}

// PendingSummaries returns (clones of) the summaries with source
// "extractive" still in L1 or L2: candidates for an LLM rewrite, submitted
// back through DecideReplaceSummary.
func (s *State) PendingSummaries() []*memoryv1.Summary {
	var out []*memoryv1.Summary
	for _, sum := range s.snap.GetL2() {
		if sum.GetSource() == SourceExtractive {
			out = append(out, proto.Clone(sum).(*memoryv1.Summary))
		}
	}
	for _, e := range s.snap.GetL1() {
		if sum := e.GetSummary(); sum != nil && sum.GetSource() == SourceExtractive {
			out = append(out, proto.Clone(sum).(*memoryv1.Summary))
		}
	}
	return out
}

func budgetOf(c *memoryv1.SessionConfig) uint64 {
	m, r := uint64(c.GetMaxContextTokens()), uint64(c.GetReservedOutputTokens())
	if m <= r {
		return 0
	}
	return m - r
}

// recount recomputes the derived token totals from the snapshot.
func (s *State) recount() {
	s.tok = totals{}
	if s.snap == nil {
		return
	}
	t := &s.tok
	t.rom = uint64(s.snap.GetRom().GetTokens())
	t.pendingRom = uint64(s.snap.GetPendingRom().GetTokens())
	t.kernel = kernelTokens(s.snap.GetKernel())
	for _, sum := range s.snap.L2 {
		t.l2 += uint64(sum.GetTokens())
	}
	for _, m := range s.snap.Promoted {
		t.promoted += uint64(m.GetTokens())
	}
	for _, e := range s.snap.L1 {
		t.l1 += uint64(entryTokens(e))
	}
	for _, r := range s.snap.GetAssembled().GetRecalled() {
		t.recalled += uint64(r.GetTokens())
	}
	for _, m := range s.snap.GetAssembled().GetMemory() {
		t.memory += uint64(m.GetTokens())
	}
	t.shownL1, t.shownL2 = s.countShown()
	s.remark()
}

func kernelTokens(k *memoryv1.Kernel) uint64 {
	var n uint64
	for _, t := range k.GetTools() {
		n += uint64(t.GetTokens())
	}
	for _, sc := range k.GetSchemas() {
		n += uint64(sc.GetTokens())
	}
	for _, r := range k.GetToolResults() {
		n += uint64(r.GetTokens())
	}
	for _, f := range k.GetFacts() {
		n += uint64(f.GetTokens())
	}
	return n
}

func entryTokens(e *memoryv1.L1Entry) uint32 {
	if m := e.GetMessage(); m != nil {
		return m.GetTokens()
	}
	return e.GetSummary().GetTokens()
}

// entryRange returns the message seqs an L1 entry covers.
func entryRange(e *memoryv1.L1Entry) (first, last uint64) {
	if m := e.GetMessage(); m != nil {
		return m.GetSeq(), m.GetSeq()
	}
	s := e.GetSummary()
	return s.GetFirstSeq(), s.GetLastSeq()
}

// l1At returns the index of the L1 entry whose first seq is seq, and
// whether there is one. L1 is in seq order (an entry's seq is its
// message's, or its summary's first_seq): a binary search.
func l1At(l1 []*memoryv1.L1Entry, seq uint64) (int, bool) {
	return slices.BinarySearchFunc(l1, seq, func(e *memoryv1.L1Entry, seq uint64) int {
		first, _ := entryRange(e)
		return cmp.Compare(first, seq)
	})
}
