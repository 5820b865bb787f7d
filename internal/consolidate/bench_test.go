package consolidate

import (
	"fmt"
	"testing"
)

// BenchmarkExtract: one session of 100 messages (50 user turns, a fact
// in every fifth).
func BenchmarkExtract(b *testing.B) {
	var msgs []Message
	for i := range 50 {
		text := "Not much going on, the weather was grey and I made soup again."
		if i%5 == 0 {
			text = fmt.Sprintf("By the way, I moved to Porto %d weeks ago and my daughter's name is Ana.", i)
		}
		msgs = append(msgs, user(fmt.Sprintf("u%d", i), uint64(2*i+1), text), bot(fmt.Sprintf("a%d", i), uint64(2*i+2), "That sounds nice, tell me more?"))
	}
	b.ReportAllocs()
	for b.Loop() {
		Extract(msgs, nil)
	}
}
