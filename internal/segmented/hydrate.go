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

// KeyOf returns the key of scope whose SHA-256 is sum (a memory item
// names its key by digest: MemoryItem.key_sha256); ok is false when the
// scope holds no such key (erased).
type KeyOf func(scope string, sum []byte) (key string, ok bool)

// MessageAt returns message seq of session (a recalled item of another
// session, or of the context's own); ok is false when the session no
// longer holds it (erased).
type MessageAt func(session string, seq uint64) (m *memoryv1.Message, ok bool)

// SummaryAt returns archived summary id of session (a recalled archived
// summary); ok is false when the swap no longer holds it.
type SummaryAt func(session, id string) (sum *memoryv1.Summary, ok bool)

// Sources are where Hydrate reads the texts a context holds by reference.
// A nil func finds nothing.
type Sources struct {
	Entry   EntryText
	Key     KeyOf
	Message MessageAt
	Summary SummaryAt
}

// Hydrate returns cx with the text of each message that holds a reference
// read from src: a memory section item (ContextMessage.memory, an entry
// version) and a recalled message, of another session or of the session's
// own swap (ContextMessage.recalled: the log keeps which message and how
// much of its text, not the text). A memory item's key is read by its digest
// (src.Key), then its text. A message whose source is gone is left out,
// and its tokens with it: an erased entry or session leaves no trace in
// any context. cx is not changed; a context without references is returned as
// is. It fills a context being sent now; HydrateAt fills one shown as it
// was sent (time travel).
func Hydrate(cx *memoryv1.ContextReply, src Sources) *memoryv1.ContextReply {
	return hydrate(cx, func(ref *memoryv1.MemoryItem) (string, string, bool) {
		key := ref.GetKey()
		if key == "" {
			if src.Key == nil {
				return "", "", false
			}
			var ok bool
			if key, ok = src.Key(ref.GetScope(), ref.GetKeySha256()); !ok {
				return "", "", false
			}
		}
		if src.Entry == nil {
			return "", "", false
		}
		value, ok := src.Entry(ref.GetScope(), key, ref.GetVersion())
		if !ok {
			return "", "", false
		}
		return key, itemText(ref, key, value), true
	}, func(ref *memoryv1.RecalledItem) (string, bool) {
		if id := ref.GetSummaryId(); id != "" {
			if src.Summary == nil {
				return "", false
			}
			sum, ok := src.Summary(cx.GetSessionId(), id)
			if !ok {
				return "", false
			}
			return ArchivedSummaryItemText(ref, sum), true
		}
		if src.Message == nil {
			return "", false
		}
		m, ok := src.Message(refSession(cx, ref), ref.GetSeq())
		if !ok || m.GetId() != ref.GetMessageId() {
			return "", false
		}
		return recalledItemText(ref, m), true
	})
}

// recalledItemText is the text recalled item ref shows of message m: the
// first text_bytes bytes of EarlierSessionText (EarlierContinuedText when
// continued) for a message of another session, of its "Recalled …" text
// (recalledText) for one of the session's own; then "…" when it was
// trimmed.
func recalledItemText(ref *memoryv1.RecalledItem, m *memoryv1.Message) string {
	if ref.GetSessionId() == "" {
		return cutText(recalledText(m), ref.GetTextBytes(), ref.GetTrimmed())
	}
	return cutText(earlierText(ref, m), ref.GetTextBytes(), ref.GetTrimmed())
}

// refSession is the session of the message recalled item ref refers to:
// its session_id, or the context's own session when unset (a message of
// the session's own swap).
func refSession(cx *memoryv1.ContextReply, ref *memoryv1.RecalledItem) string {
	if sid := ref.GetSessionId(); sid != "" {
		return sid
	}
	return cx.GetSessionId()
}

// HydrateMemory is Hydrate with entry texts only (recalled messages of
// other sessions are left out).
func HydrateMemory(cx *memoryv1.ContextReply, get EntryText, key KeyOf) *memoryv1.ContextReply {
	return Hydrate(cx, Sources{Entry: get, Key: key})
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

// EntryAt returns the key and the value of the entry version memory item
// ref of a past context showed, or why the log no longer holds it. key
// is "" when the log no longer holds the key (an erased key is known by
// its digest alone).
type EntryAt func(ref *memoryv1.MemoryItem) (key, value string, state PastEntry)

// MessageAtPast returns a message of another session a past context
// recalled, or why the log no longer holds it (PastErased, PastLeftOut;
// PastNotKept).
type MessageAtPast func(session string, seq uint64) (m *memoryv1.Message, state PastEntry)

// HydrateMemoryAt is HydrateAt without recalled messages (they show as
// not kept).
func HydrateMemoryAt(cx *memoryv1.ContextReply, get EntryAt) *memoryv1.ContextReply {
	return HydrateAt(cx, get, nil)
}

// HydrateAt is Hydrate for a context shown as it was sent (time travel):
// every item the node sent stays, with the tokens it took. An item whose
// source is gone since shows a marker instead of its text (ErasedText,
// NotKeptText, ErasedRecalledText), so the layers' counts and the usage
// are those of what was sent, and each listed item is accounted for. An
// item the node no longer sent at that point (PastLeftOut) is left out
// with its tokens. cx is not changed.
func HydrateAt(cx *memoryv1.ContextReply, get EntryAt, msg MessageAtPast) *memoryv1.ContextReply {
	return HydrateAtWith(cx, get, msg, nil)
}

// SummaryAtPast returns an archived summary of the session a past context
// recalled (false: its log no longer holds it).
type SummaryAtPast func(id string) (*memoryv1.Summary, bool)

// HydrateAtWith is HydrateAt with the session's archived summaries read
// from sum (nil: they show as not kept).
func HydrateAtWith(cx *memoryv1.ContextReply, get EntryAt, msg MessageAtPast, sum SummaryAtPast) *memoryv1.ContextReply {
	return hydrate(cx, func(ref *memoryv1.MemoryItem) (string, string, bool) {
		var (
			key, value string
			state      = PastNotKept
		)
		if get != nil {
			key, value, state = get(ref)
		}
		if key == "" {
			key = ref.GetKey() // an item written before
		}
		switch {
		case state == PastText && key != "":
			return key, itemText(ref, key, value), true
		case state == PastErased:
			return key, ErasedText(ref, key), true
		case state == PastLeftOut:
			return "", "", false
		default:
			return key, NotKeptText(ref, key), true
		}
	}, func(ref *memoryv1.RecalledItem) (string, bool) {
		if id := ref.GetSummaryId(); id != "" {
			if sum != nil {
				if s, ok := sum(id); ok {
					return ArchivedSummaryItemText(ref, s), true
				}
			}
			return fmt.Sprintf("[not kept] archived summary %s: no longer in the log", id), true
		}
		state := PastNotKept
		var m *memoryv1.Message
		if msg != nil {
			m, state = msg(refSession(cx, ref), ref.GetSeq())
		}
		switch {
		case state == PastText && m.GetId() == ref.GetMessageId():
			return recalledItemText(ref, m), true
		case state == PastLeftOut:
			return "", false
		case state == PastErased && ref.GetSessionId() != "":
			return ErasedRecalledText(ref), true
		default:
			return fmt.Sprintf("[not kept] %s (session %s): no longer in the log", ref.GetMessageId(), refSession(cx, ref)), true
		}
	})
}

// ErasedRecalledText is what a past context shows for a recalled message
// of another session erased since.
func ErasedRecalledText(ref *memoryv1.RecalledItem) string {
	return fmt.Sprintf("[erased] %s of an earlier session: that session was erased since; its text is no longer in the log", ref.GetMessageId())
}

// ErasedText is what a past context shows for memory item ref whose entry
// was erased since; key is its key when still known (KeyName: else a
// prefix of its digest).
func ErasedText(ref *memoryv1.MemoryItem, key string) string {
	return fmt.Sprintf("[erased] Memory %s %s (v%d): this entry was erased since; its text is no longer in the log",
		ref.GetScope(), KeyName(ref, key), ref.GetVersion())
}

// NotKeptText is what a past context shows for memory item ref whose
// entry version the log no longer keeps (compacted away); key as for
// ErasedText.
func NotKeptText(ref *memoryv1.MemoryItem, key string) string {
	return fmt.Sprintf("[not kept] Memory %s %s (v%d): this version is older than what the log keeps of the scope (the time-travel window); its text is no longer in the log",
		ref.GetScope(), KeyName(ref, key), ref.GetVersion())
}

// hydrate returns cx with each reference filled by fillMemory or
// fillRecalled: its text, or false to leave the message (and its tokens)
// out. fillMemory also returns the item's key as read ("" when it cannot
// be: the message's id then names the key by digest, MemoryID).
func hydrate(cx *memoryv1.ContextReply, fillMemory func(*memoryv1.MemoryItem) (string, string, bool), fillRecalled func(*memoryv1.RecalledItem) (string, bool)) *memoryv1.ContextReply {
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
		var (
			key, text string
			ok        bool
		)
		id := m.GetId()
		switch mem, rec := m.GetMemory(), m.GetRecalled(); {
		case mem != nil:
			if key, text, ok = fillMemory(mem); !ok {
				droppedMemory += m.GetTokens()
				continue
			}
			id = MemoryID(mem, key)
		case rec != nil:
			if text, ok = fillRecalled(rec); !ok {
				droppedRecalled += m.GetTokens()
				continue
			}
		default:
			msgs = append(msgs, m)
			continue
		}
		msgs = append(msgs, &memoryv1.ContextMessage{Layer: m.GetLayer(), Id: id, Role: m.GetRole(),
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

// itemText is the text memory item ref, whose key reads key, shows of
// value: the first text_bytes bytes of MemoryText, then "…" when it was
// trimmed.
func itemText(ref *memoryv1.MemoryItem, key, value string) string {
	return cutText(memoryTextOf(ref, key, value), ref.GetTextBytes(), ref.GetTrimmed())
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
// then not a function of the session's version alone. A recalled message
// of the session's own is read by reference too, but it is the session's:
// it changes only with the session (erased with it), so it does not count.
func (s *State) MemoryByReference() bool {
	a := s.snap.GetAssembled()
	for _, m := range a.GetMemory() {
		if m.GetText() == "" {
			return true
		}
	}
	for _, r := range a.GetRecalled() {
		if (r.GetSessionId() != "" || r.GetSummaryId() != "") && r.GetText() == "" {
			return true
		}
	}
	return false
}
