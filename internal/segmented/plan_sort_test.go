package segmented

import (
	"math/rand/v2"
	"slices"
	"testing"
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
