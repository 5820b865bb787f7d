package swap

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestTopK(t *testing.T) {
	top := NewTopK(3)
	for _, h := range []Hit{
		{DocID: 9, Score: 1}, {DocID: 4, Score: 5}, {DocID: 7, Score: 2},
		{DocID: 3, Score: 2}, {DocID: 8, Score: 2}, {DocID: 1, Score: 0.5},
	} {
		top.Offer(h)
	}
	want := []Hit{{DocID: 4, Score: 5}, {DocID: 3, Score: 2}, {DocID: 7, Score: 2}}
	if got := top.Sorted(); !slices.Equal(got, want) {
		t.Fatalf("Sorted() = %+v, want %+v", got, want)
	}
	// Sorted does not consume: offering more still works.
	top.Offer(Hit{DocID: 2, Score: 2})
	want = []Hit{{DocID: 4, Score: 5}, {DocID: 2, Score: 2}, {DocID: 3, Score: 2}}
	if got := top.Sorted(); !slices.Equal(got, want) {
		t.Fatalf("after another offer Sorted() = %+v, want %+v", got, want)
	}
	if top.Len() != 3 {
		t.Fatalf("Len() = %d, want 3", top.Len())
	}
}

func TestTopKBounds(t *testing.T) {
	for _, k := range []int{-1, 0} {
		top := NewTopK(k)
		top.Offer(Hit{DocID: 1, Score: 1})
		if got := top.Sorted(); len(got) != 0 {
			t.Errorf("k=%d keeps %+v", k, got)
		}
	}
	top := NewTopK(10)
	top.Offer(Hit{DocID: 1, Score: 1})
	top.Offer(Hit{DocID: 2, Score: 3})
	if got, want := top.Sorted(), []Hit{{DocID: 2, Score: 3}, {DocID: 1, Score: 1}}; !slices.Equal(got, want) {
		t.Errorf("fewer than k: %+v, want %+v", got, want)
	}
	if got := NewTopK(5).Sorted(); len(got) != 0 {
		t.Errorf("empty TopK: %+v", got)
	}
	top = NewTopK(2)
	top.Offer(Hit{DocID: 1, Score: math.NaN()})
	top.Offer(Hit{DocID: 2, Score: math.Inf(-1)})
	top.Offer(Hit{DocID: 3, Score: 0})
	if got := top.Sorted(); len(got) != 2 || got[0].DocID != 3 || got[1].DocID != 2 {
		t.Errorf("NaN must rank last: %+v", got)
	}
}

// TestTopKMatchesSort compares TopK with sorting every hit (the naive
// reference). rapid prints the seed of a failing run.
func TestTopKMatchesSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(0, 20).Draw(t, "k")
		// Few distinct scores and ids so that ties are common; ids unique.
		ids := rapid.SliceOfNDistinct(rapid.Uint64Range(0, 60), 0, 50, rapid.ID).Draw(t, "ids")
		var hits []Hit
		top := NewTopK(k)
		for _, id := range ids {
			h := Hit{DocID: id, Score: float64(rapid.IntRange(0, 4).Draw(t, "score")) / 2}
			hits = append(hits, h)
			top.Offer(h)
		}
		slices.SortFunc(hits, func(a, b Hit) int {
			if a.Score != b.Score {
				if a.Score > b.Score {
					return -1
				}
				return 1
			}
			if a.DocID < b.DocID {
				return -1
			}
			return 1
		})
		want := hits[:min(k, len(hits))]
		if got := top.Sorted(); !slices.Equal(got, want) {
			t.Fatalf("TopK(%d) = %+v, want %+v", k, got, want)
		}
	})
}

// TestTopKAdmits: Admits says exactly whether Offer keeps the hit.
func TestTopKAdmits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, k := range []int{0, 1, 3, 10} {
		top := NewTopK(k)
		for i := 0; i < 500; i++ {
			h := Hit{DocID: uint64(i), Score: float64(rng.IntN(20))}
			if rng.IntN(30) == 0 {
				h.Score = math.NaN()
			}
			admits := top.Admits(h.Score, h.DocID)
			top.Offer(h)
			kept := slices.ContainsFunc(top.Sorted(), func(x Hit) bool { return x.DocID == h.DocID })
			if admits != kept {
				t.Fatalf("k=%d offer %d %+v: Admits %v, kept %v", k, i, h, admits, kept)
			}
		}
	}
}

// TestTopKByMatchesSort: NewTopKBy ranks equal scores by its order (here
// the larger DocID first), as sorting every hit would.
func TestTopKByMatchesSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(0, 20).Draw(t, "k")
		ids := rapid.SliceOfNDistinct(rapid.Uint64Range(0, 60), 0, 50, rapid.ID).Draw(t, "ids")
		var hits []Hit
		top := NewTopKBy(k, func(a, b uint64) bool { return a > b })
		for _, id := range ids {
			h := Hit{DocID: id, Score: float64(rapid.IntRange(0, 4).Draw(t, "score")) / 2}
			hits = append(hits, h)
			if top.Admits(h.Score, h.DocID) != (k > 0 && (top.Len() < k || slices.IndexFunc(top.Sorted(), func(x Hit) bool {
				return h.Score > x.Score || (h.Score == x.Score && h.DocID > x.DocID)
			}) >= 0)) {
				t.Fatalf("Admits(%v, %d) disagrees with the kept hits %+v", h.Score, h.DocID, top.Sorted())
			}
			top.Offer(h)
		}
		slices.SortFunc(hits, func(a, b Hit) int {
			if a.Score != b.Score {
				if a.Score > b.Score {
					return -1
				}
				return 1
			}
			if a.DocID > b.DocID {
				return -1
			}
			return 1
		})
		want := hits[:min(k, len(hits))]
		if got := top.Sorted(); !slices.Equal(got, want) {
			t.Fatalf("TopKBy(%d) = %+v, want %+v", k, got, want)
		}
	})
}

// TestTopKThreshold: while full, a hit scoring below Threshold is never
// admitted, and one scoring above it always is; while not full, any is.
func TestTopKThreshold(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for _, k := range []int{0, 1, 3, 10} {
		top := NewTopK(k)
		for i := 0; i < 500; i++ {
			h := Hit{DocID: uint64(rng.IntN(1000)), Score: float64(rng.IntN(20))}
			th, full := top.Threshold()
			admits := top.Admits(h.Score, h.DocID)
			switch {
			case !full && !admits:
				t.Fatalf("k=%d offer %d %+v: not full, yet not admitted", k, i, h)
			case full && h.Score < th && admits:
				t.Fatalf("k=%d offer %d %+v: below the threshold %v, admitted", k, i, h, th)
			case full && h.Score > th && !admits:
				t.Fatalf("k=%d offer %d %+v: above the threshold %v, not admitted", k, i, h, th)
			}
			top.Offer(h)
		}
	}
}
