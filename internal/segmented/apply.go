package segmented

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// ErrApply is wrapped by every error Apply returns: the events do not fit
// the state (a corrupt or reordered log). The state is then unchanged.
var ErrApply = errors.New("segmented: cannot apply event")

// Apply applies one stored batch: the events, then meta (version, last_seq,
// updated time, and the command in recent_commands, keeping the last
// MaxRecentCommands). It never tokenizes, summarizes, reads a clock or
// decides: every value comes from the events and meta. Apply is atomic:
// on error the state is unchanged. Its cost is that of the changes the
// events make, not the size of the session.
func (s *State) Apply(meta Meta, events []proto.Message) error {
	if meta.Version <= s.Version() {
		return fmt.Errorf("%w: version %d after version %d", ErrApply, meta.Version, s.Version())
	}
	s.begin(true)
	defer s.rollback() // no-op after commit; undoes a failed (or panicking) batch
	for i, ev := range events {
		if err := s.applyEvent(ev, meta.TimeUnixNano); err != nil {
			return fmt.Errorf("%w: event %d (%T): %v", ErrApply, i, ev, err)
		}
	}
	p := s.snap
	if p == nil {
		return fmt.Errorf("%w: batch does not create the session", ErrApply)
	}
	p.Version = meta.Version
	p.LastSeq = meta.Seq
	p.UpdatedUnixNano = meta.TimeUnixNano
	if meta.CommandID != "" {
		p.RecentCommands = append(p.RecentCommands, &memoryv1.CommandResult{
			CommandId: meta.CommandID, Version: meta.Version, Seq: meta.Seq, Digest: meta.Digest,
		})
		if n := len(p.RecentCommands); n > MaxRecentCommands {
			// Reslice, do not copy: append reallocates (keeping only the
			// window) when the backing array is full, so this is O(1)
			// amortized.
			p.RecentCommands = p.RecentCommands[n-MaxRecentCommands:]
		}
	}
	s.commit()
	s.ctxCache = nil
	return nil
}

// applyEvent applies one event to s inside a transaction (see txn for what
// it may change in place) and keeps the token totals and, through deltas,
// the indexes up to date.
func (s *State) applyEvent(ev proto.Message, now int64) error {
	shown := s.snap != nil && s.endsWithShownMessage()
	if err := s.applyOne(ev, now); err != nil {
		return err
	}
	s.remarkAfter(ev, shown)
	return nil
}

// applyOne is applyEvent but for the day marks the context adds.
func (s *State) applyOne(ev proto.Message, now int64) error {
	if s.snap == nil {
		e, ok := ev.(*memoryv1.SessionCreated)
		if !ok {
			return errors.New("session does not exist")
		}
		s.snap = &memoryv1.SessionSnapshot{
			SessionId:       e.SessionId,
			UserId:          e.UserId,
			App:             e.App,
			Project:         e.Project,
			AgentId:         e.AgentId,
			AgentType:       e.AgentType,
			DayMarks:        e.DayMarks,
			Status:          memoryv1.SessionStatus_SESSION_STATUS_CREATED,
			Config:          e.Config,
			Rom:             e.Rom,
			Kernel:          &memoryv1.Kernel{},
			NextMessageSeq:  1,
			NextSummarySeq:  1,
			CreatedUnixNano: now,
		}
		s.tok = totals{rom: uint64(e.Rom.GetTokens())}
		return nil
	}
	p := s.snap
	t := &s.tok
	switch e := ev.(type) {
	case *memoryv1.SessionCreated:
		return errors.New("session already exists")
	case *memoryv1.SessionStatusChanged:
		if e.From != p.Status {
			return fmt.Errorf("status is %v, event says %v", p.Status, e.From)
		}
		p.Status = e.To
	case *memoryv1.RomUpdated:
		p.PendingRom = e.Rom
		t.pendingRom = uint64(p.PendingRom.GetTokens())
	case *memoryv1.RomActivated:
		if p.PendingRom == nil || p.PendingRom.Version != e.Version {
			return fmt.Errorf("no pending ROM version %d", e.Version)
		}
		p.Rom, p.PendingRom = p.PendingRom, nil
		t.rom, t.pendingRom = uint64(p.Rom.GetTokens()), 0
	case *memoryv1.MessagesAppended:
		if err := s.applyMessages(e); err != nil {
			return err
		}
		if len(e.GetMessages()) > 0 {
			s.snap.LastAppendFirstSeq = e.GetMessages()[0].GetSeq()
		}
	case *memoryv1.L1Summarized:
		i, j, err := s.findRun(e.Summary)
		if err != nil {
			return err
		}
		entry := &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Summary{Summary: e.Summary}}
		noIDs := s.removeRun(i, j, e.Summary)
		if i == 0 {
			// The usual case (compression takes the oldest entries):
			// the summary takes the slot of the run's last entry.
			s.setL1(j-1, entry)
			p.L1 = p.L1[j-1:]
		} else {
			l1 := make([]*memoryv1.L1Entry, 0, len(p.L1)-(j-i)+1)
			l1 = append(l1, p.L1[:i]...)
			l1 = append(l1, entry)
			p.L1 = append(l1, p.L1[j:]...)
		}
		t.l1 += uint64(e.Summary.GetTokens())
		s.shownL1Add(entry, true)
		s.track(delta{d: 1, entry: entry, noIDs: noIDs})
		p.NextSummarySeq++
		p.Compressions++
	case *memoryv1.L1Evicted:
		if err := s.applyEvicted(e); err != nil {
			return err
		}
	case *memoryv1.L2Archived:
		if err := s.applyArchived(e); err != nil {
			return err
		}
	case *memoryv1.SummaryReplaced:
		if !s.replaceSummary(e) {
			return fmt.Errorf("no summary %q", e.SummaryId)
		}
	case *memoryv1.KernelToolDefined:
		k := cloneKernel(p.Kernel)
		k.Tools = upsertSorted(k.Tools, e.Tool, (*memoryv1.ToolDefinition).GetName)
		s.setKernel(k)
	case *memoryv1.KernelToolRemoved:
		k := cloneKernel(p.Kernel)
		k.Tools = slices.DeleteFunc(k.Tools, func(t *memoryv1.ToolDefinition) bool { return t.Name == e.Name })
		s.setKernel(k)
	case *memoryv1.KernelSchemaCached:
		k := cloneKernel(p.Kernel)
		k.Schemas = slices.DeleteFunc(k.Schemas, func(x *memoryv1.SchemaEntry) bool {
			return x.Name == e.Schema.GetName() || slices.Contains(e.Evicted, x.Name)
		})
		k.Schemas = append(k.Schemas, e.Schema)
		s.setKernel(k)
	case *memoryv1.KernelFactSet:
		k := cloneKernel(p.Kernel)
		k.Facts = upsertSorted(k.Facts, e.Fact, (*memoryv1.Fact).GetKey)
		s.setKernel(k)
	case *memoryv1.KernelFactDeleted:
		k := cloneKernel(p.Kernel)
		k.Facts = slices.DeleteFunc(k.Facts, func(f *memoryv1.Fact) bool { return f.Key == e.Key })
		s.setKernel(k)
	case *memoryv1.SessionStateSet:
		// SessionState is small and changed in place by upsertSorted: copy it first.
		p.SessionState = upsertSorted(slices.Clone(p.SessionState), &memoryv1.StateEntry{Key: e.Key, Value: slices.Clone(e.Value)}, (*memoryv1.StateEntry).GetKey)
	case *memoryv1.SessionStateDeleted:
		p.SessionState = slices.DeleteFunc(slices.Clone(p.SessionState), func(x *memoryv1.StateEntry) bool { return x.Key == e.Key })
	case *memoryv1.SessionStateCleared:
		p.SessionState = slices.DeleteFunc(slices.Clone(p.SessionState), func(x *memoryv1.StateEntry) bool { return slices.Contains(e.Keys, x.Key) })
		if len(p.SessionState) == 0 {
			p.SessionState = nil
		}
	case *memoryv1.MessagesPromoted:
		s.applyPromoted(e)
	case *memoryv1.PromotedCleared:
		s.applyPromotedCleared(e)
	case *memoryv1.ContextAssembled:
		s.applyAssembled(e)
	default:
		return fmt.Errorf("unknown event type %T", ev)
	}
	return nil
}

// applyEvicted moves the oldest L1 entries to L2: the in-place summaries
// named by e.MovedSummaryIds as they are, then the run e.Summary replaces.
func (s *State) applyEvicted(e *memoryv1.L1Evicted) error {
	p := s.snap
	t := &s.tok
	if len(e.MovedSummaryIds) == 0 && e.Summary == nil {
		return errors.New("eviction moves nothing")
	}
	for i, id := range e.MovedSummaryIds {
		if i >= len(p.L1) || p.L1[i].GetSummary().GetId() != id || id == "" {
			return fmt.Errorf("moved summary %q is not L1 entry %d", id, i)
		}
	}
	for _, entry := range p.L1[:len(e.MovedSummaryIds)] {
		sum := entry.GetSummary()
		t.l1 -= uint64(sum.GetTokens())
		t.l2 += uint64(sum.GetTokens())
		s.shownL1Add(entry, false)
		s.shownL2Add(sum, true)
		p.L2 = append(p.L2, sum) // in place: see txn
		// The summary's message ids stay known: no id deltas.
		s.track(delta{d: -1, entry: entry, noIDs: true})
		s.track(delta{d: 1, l2: sum, noIDs: true})
	}
	p.L1 = p.L1[len(e.MovedSummaryIds):]
	p.Compressions++ // one step, whatever it moves
	if e.Summary == nil {
		return nil
	}
	i, j, err := s.findRun(e.Summary)
	if err != nil {
		return err
	}
	if i != 0 {
		return errors.New("evicted run is not the oldest L1 run")
	}
	noIDs := s.removeRun(i, j, e.Summary)
	p.L1 = p.L1[j:]
	p.L2 = append(p.L2, e.Summary)
	t.l2 += uint64(e.Summary.GetTokens())
	s.shownL2Add(e.Summary, true)
	s.track(delta{d: 1, l2: e.Summary, noIDs: noIDs})
	p.NextSummarySeq++
	return nil
}

// applyArchived moves the oldest L2 summaries to swap, and puts their
// condensed summary, if any, at the head of L2. (Logs written before
// condensed existed archive all of L2, which this handles alike; an event
// listing no summaries is read as the old "clear L2".)
func (s *State) applyArchived(e *memoryv1.L2Archived) error {
	p := s.snap
	k := len(e.Summaries)
	if k == 0 {
		if e.Condensed != nil {
			return errors.New("condensed summary of no archived summaries")
		}
		k = len(p.L2)
	}
	if k > len(p.L2) {
		return fmt.Errorf("archives %d summaries of the %d in L2", k, len(p.L2))
	}
	for i, sum := range e.Summaries {
		if p.L2[i].GetId() != sum.GetId() {
			return fmt.Errorf("archived summary %q is not L2 entry %d (%q)", sum.GetId(), i, p.L2[i].GetId())
		}
	}
	for _, sum := range p.L2[:k] {
		s.tok.l2 -= uint64(sum.GetTokens())
		s.shownL2Add(sum, false)
		s.track(delta{d: -1, l2: sum})
	}
	p.ArchivedL2Count += uint64(k)
	if e.Condensed == nil {
		p.L2 = p.L2[k:]
		if len(p.L2) == 0 {
			p.L2 = nil
		}
		return nil
	}
	// The condensed summary takes the slot of the last archived one.
	p.L2 = p.L2[k-1:]
	s.setL2(0, e.Condensed)
	s.tok.l2 += uint64(e.Condensed.GetTokens())
	s.shownL2Add(e.Condensed, true)
	s.track(delta{d: 1, l2: e.Condensed})
	p.NextSummarySeq++
	return nil
}

// removeRun takes the L1 entries [i, j), which sum replaces, out of the
// totals and indexes (the caller takes them out of L1). It reports whether
// the deltas leave the message ids out (see sameIDs): then the caller's
// delta for sum must too.
func (s *State) removeRun(i, j int, sum *memoryv1.Summary) (noIDs bool) {
	run := s.snap.L1[i:j]
	noIDs = s.tx.track && sameIDs(run, sum.GetMessageIds())
	for _, e := range run {
		s.tok.l1 -= uint64(entryTokens(e))
		s.shownL1Add(e, false)
		s.track(delta{d: -1, entry: e, noIDs: noIDs})
	}
	return noIDs
}

// setKernel replaces the Kernel (a new one: see txn) and recounts it.
func (s *State) setKernel(k *memoryv1.Kernel) {
	s.snap.Kernel = k
	s.tok.kernel = kernelTokens(k)
}

func (s *State) applyMessages(e *memoryv1.MessagesAppended) error {
	p := s.snap
	for _, m := range e.Messages {
		if m.Seq != p.NextMessageSeq {
			return fmt.Errorf("message seq %d, want %d", m.Seq, p.NextMessageSeq)
		}
		entry := &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Message{Message: m}}
		p.L1 = append(p.L1, entry) // in place: amortized O(1)
		s.tok.l1 += uint64(m.GetTokens())
		s.shownL1Add(entry, true)
		s.track(delta{d: 1, entry: entry})
		p.NextMessageSeq++
		p.TotalMessages++
		if m.Turn > p.Turn {
			p.Turn = m.Turn
		}
	}
	if len(e.ToolResultRefs) > 0 || len(e.DroppedRefs) > 0 {
		k := cloneKernel(p.Kernel)
		k.ToolResults = append(k.ToolResults, e.ToolResultRefs...)
		for _, r := range e.ToolResultRefs {
			s.track(delta{d: 1, ref: r})
		}
		k.ToolResults = slices.DeleteFunc(k.ToolResults, func(r *memoryv1.ToolResultRef) bool {
			if slices.Contains(e.DroppedRefs, r.ToolCallId) {
				s.track(delta{d: -1, ref: r})
				return true
			}
			return false
		})
		s.setKernel(k)
	}
	return nil
}

// findRun returns the L1 index range [i, j) of the entries a summary covers.
func (s *State) findRun(sum *memoryv1.Summary) (int, int, error) {
	if sum == nil {
		return 0, 0, errors.New("missing summary")
	}
	l1 := s.snap.L1
	i := slices.IndexFunc(l1, func(e *memoryv1.L1Entry) bool {
		f, _ := entryRange(e)
		return f == sum.FirstSeq
	})
	if i < 0 {
		return 0, 0, fmt.Errorf("no L1 entry starts at seq %d", sum.FirstSeq)
	}
	for j := i; j < len(l1); j++ {
		_, l := entryRange(l1[j])
		if l == sum.LastSeq {
			return i, j + 1, nil
		}
		if l > sum.LastSeq {
			break
		}
	}
	return 0, 0, fmt.Errorf("no L1 entry ends at seq %d", sum.LastSeq)
}

func (s *State) replaceSummary(e *memoryv1.SummaryReplaced) bool {
	p := s.snap
	repl := func(old *memoryv1.Summary) *memoryv1.Summary {
		n := proto.Clone(old).(*memoryv1.Summary)
		n.Text, n.Tokens, n.Source = e.Text, e.Tokens, e.Source
		return n
	}
	for i, sum := range p.L2 {
		if sum.Id == e.SummaryId {
			s.tok.l2 += uint64(e.Tokens) - uint64(sum.GetTokens())
			s.shownL2Add(sum, false)
			s.setL2(i, repl(sum))
			s.shownL2Add(p.L2[i], true)
			return true
		}
	}
	for i, en := range p.L1 {
		if sum := en.GetSummary(); sum != nil && sum.Id == e.SummaryId {
			s.tok.l1 += uint64(e.Tokens) - uint64(sum.GetTokens())
			s.shownL1Add(en, false)
			s.setL1(i, &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Summary{Summary: repl(sum)}})
			s.shownL1Add(p.L1[i], true)
			return true
		}
	}
	return false
}

// upsertSorted replaces the element of xs (sorted by key, and not shared:
// it is changed in place, see txn) with the key of v by v, or inserts v in
// key order.
func upsertSorted[T any](xs []T, v T, key func(T) string) []T {
	k := key(v)
	xs = slices.DeleteFunc(xs, func(x T) bool { return key(x) == k })
	i, _ := slices.BinarySearchFunc(xs, k, func(x T, k string) int { return strings.Compare(key(x), k) })
	return slices.Insert(xs, i, v)
}

// cloneKernel returns a Kernel with its own slices (sharing the items).
func cloneKernel(k *memoryv1.Kernel) *memoryv1.Kernel {
	return &memoryv1.Kernel{
		Tools:       slices.Clone(k.GetTools()),
		Schemas:     slices.Clone(k.GetSchemas()),
		ToolResults: slices.Clone(k.GetToolResults()),
		Facts:       slices.Clone(k.GetFacts()),
	}
}
