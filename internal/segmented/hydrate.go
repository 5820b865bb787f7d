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

// HydrateMemory returns cx with the text of each memory section message
// that holds a reference (ContextMessage.memory: the log keeps which text
// of which entry version, not the text, DESIGN §12) read through get. A
// message whose entry version is gone is left out, and its tokens with it:
// an erased entry leaves no trace in any context. cx is not changed; a
// context without references is returned as is.
func HydrateMemory(cx *memoryv1.ContextReply, get EntryText) *memoryv1.ContextReply {
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
		value, ok := get(ref.GetScope(), ref.GetKey(), ref.GetVersion())
		if !ok {
			dropped += m.GetTokens()
			continue
		}
		msgs = append(msgs, &memoryv1.ContextMessage{Layer: m.GetLayer(), Id: m.GetId(), Role: m.GetRole(),
			Content: itemText(ref, value), Tokens: m.GetTokens()})
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
