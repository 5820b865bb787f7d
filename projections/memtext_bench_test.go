package projections

import (
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkHydrateMemory: what reading memory items by reference costs a
// context read (the log keeps which entry version a context
// showed, the node reads its text): a context of 60 messages with 10
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
		ref := &memoryv1.MemoryItem{Scope: "user:u1", Key: fmt.Sprintf("fact%d", i), Version: 1, TextBytes: 200, Tokens: 20}
		cx.Messages = append(cx.Messages, &memoryv1.ContextMessage{Layer: "memory", Id: "memory:user:u1/" + ref.Key, Tokens: 20, Memory: ref})
		inline.Messages = append(inline.Messages, &memoryv1.ContextMessage{Layer: "memory", Id: "memory:user:u1/" + ref.Key, Tokens: 20, Content: "Memory user:u1 " + ref.Key})
	}
	for i := range 50 {
		m := &memoryv1.ContextMessage{Layer: "l1", Id: fmt.Sprintf("m%d", i), Role: memoryv1.Role_ROLE_USER, Content: "a message of the conversation, of ordinary length", Tokens: 12}
		cx.Messages = append(cx.Messages, m)
		inline.Messages = append(inline.Messages, m)
	}
	b.Run("references", func(b *testing.B) {
		for range b.N {
			out := segmented.HydrateMemory(cx, s.EntryText)
			if len(out.Messages) != 60 {
				b.Fatalf("%d messages", len(out.Messages))
			}
		}
	})
	b.Run("inline", func(b *testing.B) {
		for range b.N {
			_ = segmented.HydrateMemory(inline, s.EntryText)
		}
	})
}
