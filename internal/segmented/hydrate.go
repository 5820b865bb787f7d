package segmented

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agentmem/agentmem/internal/utf8cut"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// EntryText returns the value of an entry version as text (scope is the
// MemoryItem's "<kind>:<id>" or "global"); ok is false when the scope no
// longer holds that version (erased, or beyond the versions kept).
type EntryText func(scope, key string, version uint64) (value string, ok bool)

// HydrateMemory returns cx with the text of each memory section message
// that holds a reference (ContextMessage.memory: the log keeps which text
// of which entry version, not the text) read through get. A message whose
// entry version is gone is left out, and its tokens with it: an erased
// entry leaves no trace in any context. cx is not changed; a context
// without references is returned as is. It fills a context being sent
// now; HydrateMemoryAt fills one shown as it was sent (time travel).
func HydrateMemory(cx *memoryv1.ContextReply, get EntryText) *memoryv1.ContextReply {
	return hydrate(cx, func(ref *memoryv1.MemoryItem) (string, bool) {
		value, ok := get(ref.GetScope(), ref.GetKey(), ref.GetVersion())
		if !ok {
			return "", false
		}
		return itemText(ref, value), true
	})
}

// PastEntry says what the log holds of an entry version a past context
// showed (EntryAt).
type PastEntry uint8

const (
	// PastText: the version's value, as the context showed it.
	PastText PastEntry = iota
	// PastErased: the key was erased after the context's point; its
	// values are gone from the log.
	PastErased
	// PastLeftOut: the key was erased before the context's point, so the
	// node no longer sent the item then: it is left out, as
	// HydrateMemory leaves it out.
	PastLeftOut
	// PastNotKept: the key is still there but not this version: it is
	// older than what the log keeps of the scope (compacted out of the
	// time-travel window, or beyond the versions kept per key).
	PastNotKept
)

// EntryAt returns the value of an entry version a past context showed
// (scope is the MemoryItem's "<kind>:<id>" or "global"), or why the log no
// longer holds it.
type EntryAt func(scope, key string, version uint64) (value string, state PastEntry)

// HydrateMemoryAt is HydrateMemory for a context shown as it was sent
// (time travel): every item the node sent stays, with the tokens it took.
// An item whose value is gone since shows a marker instead of its text
// (ErasedText, NotKeptText), so the layers' counts and the usage are those
// of what was sent, and each listed item is accounted for. An item the
// node no longer sent at that point (PastLeftOut) is left out with its
// tokens. cx is not changed.
func HydrateMemoryAt(cx *memoryv1.ContextReply, get EntryAt) *memoryv1.ContextReply {
	return hydrate(cx, func(ref *memoryv1.MemoryItem) (string, bool) {
		value, state := get(ref.GetScope(), ref.GetKey(), ref.GetVersion())
		switch state {
		case PastText:
			return itemText(ref, value), true
		case PastErased:
			return ErasedText(ref), true
		case PastLeftOut:
			return "", false
		default:
			return NotKeptText(ref), true
		}
	})
}

// ErasedText is what a past context shows for memory item ref whose entry
// was erased since.
func ErasedText(ref *memoryv1.MemoryItem) string {
	return fmt.Sprintf("[erased] Memory %s %s (v%d): this entry was erased since; its text is no longer in the log",
		ref.GetScope(), ref.GetKey(), ref.GetVersion())
}

// NotKeptText is what a past context shows for memory item ref whose
// entry version the log no longer keeps (compacted away).
func NotKeptText(ref *memoryv1.MemoryItem) string {
	return fmt.Sprintf("[not kept] Memory %s %s (v%d): this version is older than what the log keeps of the scope (the time-travel window); its text is no longer in the log",
		ref.GetScope(), ref.GetKey(), ref.GetVersion())
}

// hydrate returns cx with each reference filled by fill: its text, or
// false to leave the message (and its tokens) out.
func hydrate(cx *memoryv1.ContextReply, fill func(*memoryv1.MemoryItem) (string, bool)) *memoryv1.ContextReply {
	refs := false
	for _, m := range cx.GetMessages() {
		if m.GetMemory() != nil {
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
	var dropped uint32
	for _, m := range cx.GetMessages() {
		ref := m.GetMemory()
		if ref == nil {
			msgs = append(msgs, m)
			continue
		}
		text, ok := fill(ref)
		if !ok {
			dropped += m.GetTokens()
			continue
		}
		msgs = append(msgs, &memoryv1.ContextMessage{Layer: m.GetLayer(), Id: m.GetId(), Role: m.GetRole(),
			Content: text, Tokens: m.GetTokens()})
	}
	out.Messages = msgs
	if dropped > 0 {
		if l := out.GetLayers(); l != nil {
			l.Memory -= min(dropped, l.Memory)
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
	full := MemoryText(ref, value)
	n := int(ref.GetTextBytes())
	if n >= len(full) {
		return full
	}
	t := utf8cut.Prefix(full, n)
	if ref.GetTrimmed() {
		return t + "…"
	}
	return t
}

// MemoryByReference reports whether the context's memory section refers to
// entry versions (HydrateMemory reads their texts): the context is then
// not a function of the session's version alone.
func (s *State) MemoryByReference() bool {
	for _, m := range s.snap.GetAssembled().GetMemory() {
		if m.GetText() == "" {
			return true
		}
	}
	return false
}
