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
	Kind string
	// Has are the kinds of all its events (the filter keeps a batch with
	// any event of its kind).
	Has             []string
	Current, Future bool
}

type timelineEvent struct {
	Type   string // the event's short type name (an unknown type by its name)
	Detail string
	// Msgs are the messages an append stored, by their text: the timeline
	// reads as a transcript, each linked to the conversation.
	Msgs []msgExcerpt
}

// msgExcerpt is a message as one line of the timeline.
type msgExcerpt struct {
	N      uint64 // the message's ordinal in the session
	Role   string
	Text   string
	Tokens uint32
}

// excerptLen bounds a message's text on the timeline (runes).
const excerptLen = 160

func excerpt(s string) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= excerptLen {
		return string(r)
	}
	return string(r[:excerptLen]) + "…"
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
			if ma, ok := m.(*memoryv1.MessagesAppended); ok {
				ev.Detail = ""
				for _, msg := range ma.GetMessages() {
					text := msg.GetContent()
					if text == "" && len(msg.GetToolCalls()) > 0 {
						text = "calls " + msg.GetToolCalls()[0].GetName() + "(…)"
					}
					ev.Msgs = append(ev.Msgs, msgExcerpt{N: msg.GetSeq(), Role: roleName(msg.GetRole()), Text: excerpt(text), Tokens: msg.GetTokens()})
				}
			}
		}
		row.Events = append(row.Events, ev)
	}
	row.Kind = kindOfBatch(b)
	m := kindMask(b)
	for i, k := range kinds {
		if m&(1<<i) != 0 {
			row.Has = append(row.Has, k.Name)
		}
	}
	return row
}

// kindOfBatch is a batch's main kind, for its colour: the first of
// kindPriority among its events' kinds (an append that also compressed is
// a compression; an append that assembled a context is an append).
func kindOfBatch(b *memoryv1.EventBatch) string {
	m := kindMask(b)
	for _, k := range kindPriority {
		if m&kindBit(k) != 0 {
			return k
		}
	}
	return "other"
}

var kindPriority = []string{"erase", "compress", "summary", "recall", "append", "status", "assemble", "other"}

// kindMask has the bit of every kind of the batch's events: the filter
// keeps a batch holding any event of its kind.
func kindMask(b *memoryv1.EventBatch) uint16 {
	var m uint16
	for _, a := range b.GetEvents() {
		m |= kindBit(kindOf(shortType(a)))
	}
	return m
}

func kindBit(k string) uint16 {
	for i, c := range kinds {
		if c.Name == k {
			return 1 << i
		}
	}
	return 1 << (len(kinds) - 1) // other
}

// kinds are the timeline's filter choices and legend, in order.
var kinds = []struct{ Name, Label, Hint string }{
	{"append", "Appends", "messages stored (MessagesAppended)"},
	{"assemble", "Assemblies", "recalled turns and memory chosen for a question (ContextAssembled)"},
	{"summary", "Summaries", "L1 messages folded into a summary, or a summary rewritten"},
	{"compress", "Compressions", "summaries moved from L1 to L2, or L2 archived to swap"},
	{"recall", "Promotions", "messages promoted from swap, or cleared"},
	{"status", "Status", "created, paused, resumed, terminated, archived"},
	{"erase", "Erasures", "content removed on request"},
	{"other", "Other", "kernel, ROM, session state and the rest"},
}

func validKind(k string) bool {
	for _, c := range kinds {
		if c.Name == k {
			return true
		}
	}
	return false
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
