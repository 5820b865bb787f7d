package projections

import (
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkHydrateMemory: what reading memory items by reference costs a
// context read (the log keeps which entry version a context
// showed, by its key's digest, and the node reads the key and the text): a context of 60 messages with 10
// memory items hydrated from a real projection file, beside the same
// context with the texts inline (the engine figure: HydrateMemory returns
// it as is).
//
//	go test -run '^$' -bench HydrateMemory ./projections/
func BenchmarkHydrateMemory(b *testing.B) {
	l := newScopeLog(b)
	for i := range 10 {
		l.record("user", "u1", l.put("user", "u1", fmt.Sprintf("fact%d", i), fmt.Sprintf("the user's fact number %d, a sentence of ordinary length about their life", i)))
	}
	s := openTestStore(b)
	mustApply(b, s, l.recs)
	cx := &memoryv1.ContextReply{Layers: &memoryv1.LayerTokens{Memory: 200}, Usage: &memoryv1.Usage{Budget: 4000, Used: 1000}}
	inline := &memoryv1.ContextReply{Layers: cx.Layers, Usage: cx.Usage}
	for i := range 10 {
		key := fmt.Sprintf("fact%d", i)
		ref := &memoryv1.MemoryItem{Scope: "user:u1", KeySha256: segmented.KeySum(key), Version: 1, TextBytes: 200, Tokens: 20}
		cx.Messages = append(cx.Messages, &memoryv1.ContextMessage{Layer: "memory", Id: segmented.MemoryID(ref, ""), Tokens: 20, Memory: ref})
		inline.Messages = append(inline.Messages, &memoryv1.ContextMessage{Layer: "memory", Id: "memory:user:u1/" + key, Tokens: 20, Content: "Memory user:u1 " + key})
	}
	for i := range 50 {
		m := &memoryv1.ContextMessage{Layer: "l1", Id: fmt.Sprintf("m%d", i), Role: memoryv1.Role_ROLE_USER, Content: "a message of the conversation, of ordinary length", Tokens: 12}
		cx.Messages = append(cx.Messages, m)
		inline.Messages = append(inline.Messages, m)
	}
	b.Run("references", func(b *testing.B) {
		for range b.N {
			out := segmented.HydrateMemory(cx, s.EntryText, s.EntryKey)
			if len(out.Messages) != 60 {
				b.Fatalf("%d messages", len(out.Messages))
			}
		}
	})
	b.Run("inline", func(b *testing.B) {
		for range b.N {
			_ = segmented.HydrateMemory(inline, s.EntryText, s.EntryKey)
		}
	})
}

// BenchmarkEntryKey: reading a key by its digest in a scope of 10,000
// keys: kept (the scope's digests computed once), and cold (computed
// again, as after an erase or a rewrite of the scope).
//
//	go test -run '^$' -bench EntryKey ./projections/
func BenchmarkEntryKey(b *testing.B) {
	l := newScopeLog(b)
	for i := range 10000 {
		l.record("user", "u1", l.put("user", "u1", fmt.Sprintf("episode/user/tried/thing_number_%d", i), "a value"))
	}
	s := openTestStore(b)
	mustApply(b, s, l.recs)
	sum := segmented.KeySum("episode/user/tried/thing_number_4242")
	b.Run("kept", func(b *testing.B) {
		for range b.N {
			if _, ok := s.EntryKey("user:u1", sum); !ok {
				b.Fatal("not found")
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		for range b.N {
			s.keySums.commit(&keyChanges{dropped: []string{string(scopeKey("user", "u1"))}})
			if _, ok := s.EntryKey("user:u1", sum); !ok {
				b.Fatal("not found")
			}
		}
	})
}
