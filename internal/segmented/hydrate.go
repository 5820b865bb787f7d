package segmented

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agentmem/agentmem/internal/utf8cut"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// EntryText returns the value of an entry version as text (scope is the
// MemoryItem's "<kind>:<id>" or "global"); ok is false when the scope no
// longer holds that version (erased, or beyond the versions kept).
type EntryText func(scope, key string, version uint64) (value string, ok bool)

// MessageAt returns message seq of session (a recalled item of another
// session); ok is false when the session no longer holds it (erased).
type MessageAt func(session string, seq uint64) (m *memoryv1.Message, ok bool)

// Sources are where Hydrate reads the texts a context holds by reference.
// A nil func finds nothing.
type Sources struct {
	Entry   EntryText
	Message MessageAt
	// Erased, when set, keeps an item whose source is gone as a message of
	// this text (and the item's tokens), instead of leaving it out: time
	// travel shows that the LLM was sent something since erased.
	Erased string
}

// HydrateMemory is Hydrate with entry texts only (recalled items of other
// sessions are left out).
func HydrateMemory(cx *memoryv1.ContextReply, get EntryText) *memoryv1.ContextReply {
	return Hydrate(cx, Sources{Entry: get})
}

// Hydrate returns cx with the text of each message that holds a reference
// (ContextMessage.memory, an entry version; ContextMessage.recalled, a
// message of another session: the log keeps which text, not the text) read
// from src. A message whose source is gone is left out, and its tokens with
// it, so an erased entry or session leaves no trace in any context (or,
// with src.Erased, shown as erased). cx is not changed; a context without
// references is returned as is.
func Hydrate(cx *memoryv1.ContextReply, src Sources) *memoryv1.ContextReply {
	refs := false
	for _, m := range cx.GetMessages() {
		if m.GetMemory() != nil || m.GetRecalled() != nil {
			refs = true
			break
		}
	}
	if !refs {
		return cx
	}
	// A new reply sharing the messages that do not change (cx may be the
	// actor's cached context: it is never written to).
	out := &memoryv1.ContextReply{}
	cx.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		out.ProtoReflect().Set(fd, v) // shared: every field but those replaced below
		return true
	})
	out.Layers, out.Usage = proto.CloneOf(cx.GetLayers()), proto.CloneOf(cx.GetUsage())
	msgs := make([]*memoryv1.ContextMessage, 0, len(cx.GetMessages()))
	var droppedMemory, droppedRecalled uint32
	for _, m := range cx.GetMessages() {
		text, ok, isRef := "", false, true
		switch ref, rec := m.GetMemory(), m.GetRecalled(); {
		case ref != nil:
			if src.Entry != nil {
				var value string
				if value, ok = src.Entry(ref.GetScope(), ref.GetKey(), ref.GetVersion()); ok {
					text = itemText(ref, value)
				}
			}
		case rec != nil:
			if src.Message != nil {
				var msg *memoryv1.Message
				if msg, ok = src.Message(rec.GetSessionId(), rec.GetSeq()); ok && msg.GetId() == rec.GetMessageId() {
					text = cutText(EarlierSessionText(msg), rec.GetTextBytes(), rec.GetTrimmed())
				} else {
					ok = false
				}
			}
		default:
			isRef = false
		}
		if !isRef {
			msgs = append(msgs, m)
			continue
		}
		if !ok && src.Erased != "" {
			text, ok = src.Erased, true
		}
		if !ok {
			if m.GetMemory() != nil {
				droppedMemory += m.GetTokens()
			} else {
				droppedRecalled += m.GetTokens()
			}
			continue
		}
		msgs = append(msgs, &memoryv1.ContextMessage{Layer: m.GetLayer(), Id: m.GetId(), Role: m.GetRole(),
			Content: text, Tokens: m.GetTokens(), SaidUnixNano: m.GetSaidUnixNano()})
	}
	out.Messages = msgs
	if dropped := droppedMemory + droppedRecalled; dropped > 0 {
		if l := out.GetLayers(); l != nil {
			l.Memory -= min(droppedMemory, l.Memory)
			l.Recalled -= min(droppedRecalled, l.Recalled)
		}
		if u := out.GetUsage(); u != nil {
			u.Used -= min(dropped, u.Used)
			if u.Budget > 0 {
				u.Percent = float64(u.Used) * 100 / float64(u.Budget)
			}
		}
	}
	if out.Rendered != nil {
		out.Rendered = Render(out, out.Rendered.GetFormat())
	}
	return out
}

// itemText is the text memory item ref shows of value: the first
// text_bytes bytes of MemoryText, then "…" when it was trimmed.
func itemText(ref *memoryv1.MemoryItem, value string) string {
	return cutText(MemoryText(ref, value), ref.GetTextBytes(), ref.GetTrimmed())
}

// cutText is the first n bytes of full, then "…" when trimmed.
func cutText(full string, n uint32, trimmed bool) string {
	if int(n) >= len(full) {
		return full
	}
	t := utf8cut.Prefix(full, int(n))
	if trimmed {
		return t + "…"
	}
	return t
}

// MemoryByReference reports whether the context refers to texts outside
// the session (entry versions of its memory section, messages of other
// sessions in its recalled section; Hydrate reads them): the context is
// then not a function of the session's version alone.
func (s *State) MemoryByReference() bool {
	a := s.snap.GetAssembled()
	for _, m := range a.GetMemory() {
		if m.GetText() == "" {
			return true
		}
	}
	for _, r := range a.GetRecalled() {
		if r.GetSessionId() != "" && r.GetText() == "" {
			return true
		}
	}
	return false
}
