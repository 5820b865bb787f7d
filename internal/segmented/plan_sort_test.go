package segmented

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestSortSpecMatchesSortFunc sorts random parts (values per token and
// values drawn from a few, so that ties are common) with sortSpec and with
// slices.SortFunc over before: the orders are the same, at every length
// around the run and merge boundaries.
func TestSortSpecMatchesSortFunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []specPart
	for n := range 300 {
		for range 3 {
			spec := make([]specPart, n)
			for i := range spec {
				spec[i] = specPart{den: float64(rng.IntN(5)) / 7, val: float64(rng.IntN(3)) / 3, idx: int32(rng.IntN(1000)*1000 + i), i: int32(i)}
			}
			want := slices.Clone(spec)
			slices.SortFunc(want, func(a, b specPart) int {
				if before(a.den, a.val, int(a.idx), b.den, b.val, int(b.idx)) {
					return -1
				}
				return 1
			})
			buf = sortSpec(spec, buf)
			if !slices.Equal(spec, want) {
				t.Fatalf("n=%d: sortSpec gave %v, want %v", n, spec, want)
			}
		}
	}
}

// TestSortRecalledMatchesCompareRecalled sorts random recalled sections
// (the session's own messages, archived summaries ending at them, other
// sessions' items, now and then) with sortRecalled and with
// slices.SortFunc over compareRecalled: the orders are the same.
func TestSortRecalledMatchesCompareRecalled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var keys []uint64
	var spare []*memoryv1.RecalledItem
	for n := range 80 {
		for round := range 6 {
			items := make([]*memoryv1.RecalledItem, n)
			for i := range items {
				it := &memoryv1.RecalledItem{Seq: uint64(rng.IntN(3 * (n + 1)))}
				switch rng.IntN(8) {
				case 0:
					it.SummaryId = fmt.Sprint("s", rng.IntN(3))
				case 1:
					if round%2 == 1 {
						it.SessionId, it.SaidUnixNano = fmt.Sprint("other", rng.IntN(2)), int64(rng.IntN(3))*86_400_000_000_000
					}
				}
				items[i] = it
			}
			want := slices.Clone(items)
			slices.SortStableFunc(want, compareRecalled)
			sortRecalled(items, &keys, &spare)
			for i := range items {
				if compareRecalled(items[i], want[i]) != 0 {
					t.Fatalf("n=%d: item %d is %v, want %v", n, i, items[i], want[i])
				}
			}
		}
	}
}
