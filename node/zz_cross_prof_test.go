package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func BenchmarkZZCrossAppend(b *testing.B) {
	_, nc := node.StartForTest(b, nil)
	c := client.New(nc)
	ctx := context.Background()
	words := []string{"garden", "tulips", "ferry", "violin", "lisbon", "marathon", "recipe", "puppy", "school", "painting", "camping", "guitar", "bakery", "museum", "concert"}
	for s := range 20 {
		id := fmt.Sprintf("old-%d", s)
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u", AgentId: "a", MaxContextTokens: 16384}); err != nil {
			b.Fatal(err)
		}
		var in []*memoryv1.MessageInput
		for i := range 200 {
			w := words[(s*7+i)%len(words)]
			role := memoryv1.Role_ROLE_USER
			if i%2 == 1 {
				role = memoryv1.Role_ROLE_ASSISTANT
			}
			in = append(in, &memoryv1.MessageInput{Role: role, Content: fmt.Sprintf("Session %d turn %d: we talked about the %s and the %s again, and what happened with it last week.", s, i, w, words[(i*3)%len(words)])})
		}
		for k := 0; k < len(in); k += 50 {
			if _, err := c.AppendMessages(ctx, id, in[k:k+50]...); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("no_cross=%v", off), func(b *testing.B) {
			id := fmt.Sprintf("new-%v", off)
			if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u", AgentId: "a", MaxContextTokens: 16384,
				Assembly: &memoryv1.AssemblyConfig{Recall: true, Memory: true, NoCrossSession: off}}); err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				if _, err := c.AppendMessages(ctx, id, userMsg(fmt.Sprintf("What did we say about the %s and the %s?", words[i%len(words)], words[(i+5)%len(words)]))); err != nil {
					b.Fatal(err)
				}
				total += time.Since(t0)
			}
		})
	}
}
