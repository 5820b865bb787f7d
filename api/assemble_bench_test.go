package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// BenchmarkAppendRecall measures append round trips of a long generated
// conversation (internal/convgen: user messages, replies, tool calls) into
// sessions of a 2,000-token budget, which compress from about the 60th
// message on, with the context assembler on (the default: each user
// message searches the session's swap and scopes) and off, in the same run
// on the same node. A session takes recallSessionAppends appends, then the
// next one starts. Beside them: raw-js-publish-1 of AppendRoundTrip.
func BenchmarkAppendRecall(b *testing.B) {
	_, nc := node.StartForTest(b, nil)
	c := client.New(nc)
	waitServing(b, c)
	conv, err := convgen.Generate(convgen.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name     string
		assembly *memoryv1.AssemblyConfig
	}{{"recall-on", nil}, {"recall-off", &memoryv1.AssemblyConfig{}}} {
		b.Run(v.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			ctx := context.Background()
			var id string
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				k := i % recallSessionAppends
				if k == 0 {
					b.StopTimer()
					id = fmt.Sprintf("recall-%s-%d", v.name, benchSessionSeq.Add(1))
					if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u-recall",
						MaxContextTokens: 2500, ReservedOutputTokens: 500, Assembly: v.assembly}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				a := conv.Appends[k]
				req := &memoryv1.AppendRequest{}
				for j := a.Start; j < a.End; j++ {
					req.Messages = append(req.Messages, conv.Messages[j].Input())
				}
				t0 := time.Now()
				if _, err := c.Append(ctx, id, req); err != nil {
					b.Fatalf("append %d: %v", k, err)
				}
				lat = append(lat, time.Since(t0))
			}
			reportLatency(b, lat, time.Since(start), "appends/s")
		})
	}
}

// recallSessionAppends: appends per session (about 360 messages).
const recallSessionAppends = 300
