package projections

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/cpustat"
)

// BenchmarkLiveApply is the live projector's write path: the batches of
// benchStream's shape (25 sessions, 1–3 messages per append) applied with
// applyBounded, as the projector does, in small transactions (records per
// transaction: the sub-benchmark's name) onto a store that already holds
// 20k records. One op is one record (event); the file stays open between
// ops, so later ops write into a larger file.
func BenchmarkLiveApply(b *testing.B) {
	for _, per := range []int{8, 64} {
		b.Run(fmt.Sprintf("per-tx-%d", per), func(b *testing.B) {
			const warm = 20_000
			l := newLogBuilder(b)
			rng := rand.New(rand.NewPCG(1, 1))
			gen := func(n int) {
				for i := 0; i < n; i++ {
					k := int(l.seq)
					sid := fmt.Sprintf("s%03d", k%25)
					if k < 25 {
						l.create(sid, fmt.Sprintf("u%d", k%5), "")
						continue
					}
					texts := make([]string, 1+rng.IntN(3))
					for j := range texts {
						texts[j] = benchText(rng)
					}
					l.appendMsgs(sid, texts...)
				}
			}
			s := openTestStore(b)
			gen(warm)
			for i := 0; i < len(l.recs); i += 512 {
				mustApply(b, s, l.recs[i:min(len(l.recs), i+512)])
			}
			l.recs = l.recs[:0]
			gen(b.N)
			recs := l.recs
			b.ResetTimer()
			start, cpu := time.Now(), cpustat.Start()
			for i := 0; i < len(recs); i += per {
				if _, err := s.applyBounded(b.Context(), recs[i:min(len(recs), i+per)], time.Time{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/event")
			cpu.Report(b, b.N)
		})
	}
}
