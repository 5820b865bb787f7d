package inspector

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// timelineRow is one stored batch of a session: one command's events.
type timelineRow struct {
	Seq     uint64
	Version uint64
	Time    string
	Actor   string
	Command string
	Events  []timelineEvent
	// Kind is the row's main kind, for its colour: append, compress,
	// summary, recall, assemble, erase, status, other.
	Kind            string
	Current, Future bool
}

type timelineEvent struct {
	Type   string // the event's short type name (an unknown type by its name)
	Detail string
}

// describeBatch names a batch's events and what each did. Event types this
// page does not know (added after it was written) show by their type name.
func describeBatch(seq uint64, b *memoryv1.EventBatch) timelineRow {
	row := timelineRow{Seq: seq, Version: b.GetVersion(), Time: timeOf(b.GetTimeUnixNano()), Actor: b.GetActorId(), Command: b.GetCommandId()}
	for _, a := range b.GetEvents() {
		ev := timelineEvent{Type: shortType(a)}
		m, err := a.UnmarshalNew()
		if err == nil {
			ev.Detail = detail(m)
		}
		if row.Kind == "" || row.Kind == "other" || row.Kind == "append" {
			if k := kindOf(ev.Type); k != "other" || row.Kind == "" {
				row.Kind = k
			}
		}
		row.Events = append(row.Events, ev)
	}
	return row
}

// shortType is the event's protobuf name without its package.
func shortType(a *anypb.Any) string {
	name := string(a.MessageName())
	if name == "" {
		name = a.GetTypeUrl()
	}
	return name[strings.LastIndexByte(name, '.')+1:]
}

func kindOf(typ string) string {
	switch {
	case typ == "MessagesAppended":
		return "append"
	case typ == "L1Evicted", typ == "L2Archived":
		return "compress"
	case typ == "L1Summarized", typ == "SummaryReplaced":
		return "summary"
	case typ == "MessagesPromoted", typ == "PromotedCleared":
		return "recall"
	case typ == "ContextAssembled":
		return "assemble"
	case strings.Contains(typ, "Erase"):
		return "erase"
	case typ == "SessionStatusChanged", typ == "SessionCreated":
		return "status"
	}
	return "other"
}

func detail(m proto.Message) string {
	switch e := m.(type) {
	case *memoryv1.SessionCreated:
		return fmt.Sprintf("user %q agent %q, budget %d tokens", e.GetUserId(), e.GetAgentId(), e.GetConfig().GetMaxContextTokens())
	case *memoryv1.MessagesAppended:
		var roles []string
		var tok uint32
		for _, m := range e.GetMessages() {
			roles = append(roles, fmt.Sprintf("%s #%d", roleName(m.GetRole()), m.GetSeq()))
			tok += m.GetTokens()
		}
		return fmt.Sprintf("%s · %d tokens", strings.Join(roles, ", "), tok)
	case *memoryv1.L1Summarized:
		s := e.GetSummary()
		return fmt.Sprintf("seq %d–%d → %s (%d→%d tokens)", s.GetFirstSeq(), s.GetLastSeq(), s.GetId(), s.GetCoveredTokens(), s.GetTokens())
	case *memoryv1.L1Evicted:
		s := e.GetSummary()
		out := fmt.Sprintf("%d summaries moved to L2", len(e.GetMovedSummaryIds()))
		if s != nil {
			out += fmt.Sprintf("; seq %d–%d → %s (%d tokens)", s.GetFirstSeq(), s.GetLastSeq(), s.GetId(), s.GetTokens())
		}
		return out
	case *memoryv1.L2Archived:
		return fmt.Sprintf("%d summaries (%d tokens) archived to swap", len(e.GetSummaries()), e.GetTokens())
	case *memoryv1.SummaryReplaced:
		return fmt.Sprintf("%s rewritten by %s (%d tokens)", e.GetSummaryId(), e.GetSource(), e.GetTokens())
	case *memoryv1.SessionStatusChanged:
		return fmt.Sprintf("%s → %s %s", statusName(e.GetFrom()), statusName(e.GetTo()), e.GetReason())
	case *memoryv1.MessagesPromoted:
		return fmt.Sprintf("%d messages promoted", len(e.GetMessages()))
	case *memoryv1.ContextAssembled:
		s := e.GetSections()
		return fmt.Sprintf("for %s: %d recalled, %d memory items", s.GetForMessageId(), len(s.GetRecalled()), len(s.GetMemory()))
	case *memoryv1.KernelFactSet:
		return "fact " + e.GetFact().GetKey()
	case *memoryv1.KernelToolDefined:
		return "tool " + e.GetTool().GetName()
	}
	return ""
}
