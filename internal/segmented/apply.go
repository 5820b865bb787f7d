package segmented

import (
	"errors"
	"fmt"
	"slices"

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
// on error the state is unchanged.
func (s *State) Apply(meta Meta, events []proto.Message) error {
	if meta.Version <= s.Version() {
		return fmt.Errorf("%w: version %d after version %d", ErrApply, meta.Version, s.Version())
	}
	c := s.scratch()
	for i, ev := range events {
		if err := c.applyEvent(ev, meta.TimeUnixNano); err != nil {
			return fmt.Errorf("%w: event %d (%T): %v", ErrApply, i, ev, err)
		}
	}
	if c.snap == nil {
		return fmt.Errorf("%w: batch does not create the session", ErrApply)
	}
	c.snap.Version = meta.Version
	c.snap.LastSeq = meta.Seq
	c.snap.UpdatedUnixNano = meta.TimeUnixNano
	if meta.CommandID != "" {
		c.snap.RecentCommands = append(c.snap.RecentCommands, &memoryv1.CommandResult{
			CommandId: meta.CommandID, Version: meta.Version, Seq: meta.Seq,
		})
		if n := len(c.snap.RecentCommands); n > MaxRecentCommands {
			c.snap.RecentCommands = slices.Clone(c.snap.RecentCommands[n-MaxRecentCommands:])
		}
	}
	s.snap = c.snap
	s.recount()
	s.ctxCache = nil
	return nil
}

// applyEvent applies one event to s (a scratch copy: see the copy-on-write
// rule on State) and recounts.
func (s *State) applyEvent(ev proto.Message, now int64) error {
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
			Status:          memoryv1.SessionStatus_SESSION_STATUS_CREATED,
			Config:          e.Config,
			Rom:             e.Rom,
			Kernel:          &memoryv1.Kernel{},
			NextMessageSeq:  1,
			NextSummarySeq:  1,
			CreatedUnixNano: now,
		}
		s.recount()
		return nil
	}
	p := s.snap
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
	case *memoryv1.RomActivated:
		if p.PendingRom == nil || p.PendingRom.Version != e.Version {
			return fmt.Errorf("no pending ROM version %d", e.Version)
		}
		p.Rom, p.PendingRom = p.PendingRom, nil
	case *memoryv1.MessagesAppended:
		if err := s.applyMessages(e); err != nil {
			return err
		}
	case *memoryv1.L1Summarized:
		i, j, err := s.findRun(e.Summary)
		if err != nil {
			return err
		}
		l1 := make([]*memoryv1.L1Entry, 0, len(p.L1)-(j-i)+1)
		l1 = append(l1, p.L1[:i]...)
		l1 = append(l1, &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Summary{Summary: e.Summary}})
		p.L1 = append(l1, p.L1[j:]...)
		p.NextSummarySeq++
		p.Compressions++
	case *memoryv1.L1Evicted:
		i, j, err := s.findRun(e.Summary)
		if err != nil {
			return err
		}
		if i != 0 {
			return errors.New("evicted run is not the oldest L1 run")
		}
		p.L1 = slices.Clone(p.L1[j:])
		p.L2 = append(p.L2, e.Summary)
		p.NextSummarySeq++
		p.Compressions++
	case *memoryv1.L2Archived:
		p.ArchivedL2Count += uint64(len(p.L2))
		p.L2 = nil
	case *memoryv1.SummaryReplaced:
		if !s.replaceSummary(e) {
			return fmt.Errorf("no summary %q", e.SummaryId)
		}
	case *memoryv1.KernelToolDefined:
		k := cloneKernel(p.Kernel)
		k.Tools = slices.DeleteFunc(k.Tools, func(t *memoryv1.ToolDefinition) bool { return t.Name == e.Tool.GetName() })
		i, _ := slices.BinarySearchFunc(k.Tools, e.Tool.GetName(), func(t *memoryv1.ToolDefinition, n string) int { return cmpString(t.Name, n) })
		k.Tools = slices.Insert(k.Tools, i, e.Tool)
		p.Kernel = k
	case *memoryv1.KernelToolRemoved:
		k := cloneKernel(p.Kernel)
		k.Tools = slices.DeleteFunc(k.Tools, func(t *memoryv1.ToolDefinition) bool { return t.Name == e.Name })
		p.Kernel = k
	case *memoryv1.KernelSchemaCached:
		k := cloneKernel(p.Kernel)
		k.Schemas = slices.DeleteFunc(k.Schemas, func(x *memoryv1.SchemaEntry) bool {
			return x.Name == e.Schema.GetName() || slices.Contains(e.Evicted, x.Name)
		})
		k.Schemas = append(k.Schemas, e.Schema)
		p.Kernel = k
	case *memoryv1.KernelFactSet:
		k := cloneKernel(p.Kernel)
		k.Facts = slices.DeleteFunc(k.Facts, func(f *memoryv1.Fact) bool { return f.Key == e.Fact.GetKey() })
		i, _ := slices.BinarySearchFunc(k.Facts, e.Fact.GetKey(), func(f *memoryv1.Fact, key string) int { return cmpString(f.Key, key) })
		k.Facts = slices.Insert(k.Facts, i, e.Fact)
		p.Kernel = k
	case *memoryv1.KernelFactDeleted:
		k := cloneKernel(p.Kernel)
		k.Facts = slices.DeleteFunc(k.Facts, func(f *memoryv1.Fact) bool { return f.Key == e.Key })
		p.Kernel = k
	case *memoryv1.SessionStateSet:
		p.SessionState = slices.DeleteFunc(p.SessionState, func(x *memoryv1.StateEntry) bool { return x.Key == e.Key })
		i, _ := slices.BinarySearchFunc(p.SessionState, e.Key, func(x *memoryv1.StateEntry, k string) int { return cmpString(x.Key, k) })
		p.SessionState = slices.Insert(p.SessionState, i, &memoryv1.StateEntry{Key: e.Key, Value: slices.Clone(e.Value)})
	case *memoryv1.SessionStateDeleted:
		p.SessionState = slices.DeleteFunc(p.SessionState, func(x *memoryv1.StateEntry) bool { return x.Key == e.Key })
	case *memoryv1.SessionStateCleared:
		p.SessionState = slices.DeleteFunc(p.SessionState, func(x *memoryv1.StateEntry) bool { return slices.Contains(e.Keys, x.Key) })
		if len(p.SessionState) == 0 {
			p.SessionState = nil
		}
	case *memoryv1.MessagesPromoted:
		s.applyPromoted(e)
	case *memoryv1.PromotedCleared:
		s.applyPromotedCleared(e)
	default:
		return fmt.Errorf("unknown event type %T", ev)
	}
	s.recount()
	return nil
}

func (s *State) applyMessages(e *memoryv1.MessagesAppended) error {
	p := s.snap
	for _, m := range e.Messages {
		if m.Seq != p.NextMessageSeq {
			return fmt.Errorf("message seq %d, want %d", m.Seq, p.NextMessageSeq)
		}
		p.L1 = append(p.L1, &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Message{Message: m}})
		p.NextMessageSeq++
		p.TotalMessages++
		if m.Turn > p.Turn {
			p.Turn = m.Turn
		}
	}
	if len(e.ToolResultRefs) > 0 || len(e.DroppedRefs) > 0 {
		k := cloneKernel(p.Kernel)
		k.ToolResults = append(k.ToolResults, e.ToolResultRefs...)
		k.ToolResults = slices.DeleteFunc(k.ToolResults, func(r *memoryv1.ToolResultRef) bool {
			return slices.Contains(e.DroppedRefs, r.ToolCallId)
		})
		p.Kernel = k
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
			p.L2[i] = repl(sum)
			return true
		}
	}
	for i, en := range p.L1 {
		if sum := en.GetSummary(); sum != nil && sum.Id == e.SummaryId {
			p.L1[i] = &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Summary{Summary: repl(sum)}}
			return true
		}
	}
	return false
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
