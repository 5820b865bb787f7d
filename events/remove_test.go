package events

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSpanSet: spans merge when they touch or overlap; Covers and
// NextUncovered agree with a naive set of the sequences added.
func TestSpanSet(t *testing.T) {
	var s SpanSet
	s.Add(SeqSpan{5, 7}, SeqSpan{1, 2}, SeqSpan{3, 3}, SeqSpan{10, 12}, SeqSpan{11, 14})
	held := map[uint64]bool{}
	for _, sp := range []SeqSpan{{5, 7}, {1, 2}, {3, 3}, {10, 12}, {11, 14}} {
		for q := sp.First; q <= sp.Last; q++ {
			held[q] = true
		}
	}
	if s.Len() != 3 { // 1..3, 5..7, 10..14
		t.Errorf("%d spans, want 3: %v", s.Len(), s.spans)
	}
	for q := uint64(1); q <= 16; q++ {
		if s.Covers(q, q) != held[q] {
			t.Errorf("Covers(%d) = %v", q, !held[q])
		}
		want := q
		for held[want] {
			want++
		}
		if got := s.NextUncovered(q); got != want {
			t.Errorf("NextUncovered(%d) = %d, want %d", q, got, want)
		}
	}
	var none *SpanSet
	if none.NextUncovered(4) != 4 || none.Covers(4, 4) {
		t.Error("a nil set holds something")
	}
}

// TestSpanSetAgainstNaive compares Add, Covers and Gaps with a set of
// sequences held one by one, on random spans (the seed is printed).
func TestSpanSetAgainstNaive(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range 200 {
		var s SpanSet
		naive := make(map[uint64]bool)
		for range r.IntN(8) {
			first := 1 + r.Uint64N(60)
			last := first + r.Uint64N(6)
			s.Add(SeqSpan{first, last})
			for q := first; q <= last; q++ {
				naive[q] = true
			}
		}
		for range 20 {
			first := 1 + r.Uint64N(70)
			last := first + r.Uint64N(20)
			var want []uint64
			covered := true
			for q := first; q <= last; q++ {
				if !naive[q] {
					want = append(want, q)
					covered = false
				}
			}
			if got := s.Covers(first, last); got != covered {
				t.Fatalf("round %d: %v.Covers(%d, %d) = %v, want %v", round, s.spans, first, last, got, covered)
			}
			gaps := s.Gaps(first, last)
			var got []uint64
			for i, g := range gaps {
				if g.Last < g.First || i > 0 && g.First <= gaps[i-1].Last+1 {
					t.Fatalf("round %d: %v.Gaps(%d, %d) = %v: not increasing, separate runs", round, s.spans, first, last, gaps)
				}
				for q := g.First; q <= g.Last; q++ {
					got = append(got, q)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: %v.Gaps(%d, %d) = %v, want the sequences %v", round, s.spans, first, last, gaps, want)
			}
		}
	}
	var nilSet *SpanSet
	if g := nilSet.Gaps(3, 5); !slices.Equal(g, []SeqSpan{{3, 5}}) {
		t.Errorf("nil set: Gaps(3, 5) = %v", g)
	}
	if g := nilSet.Gaps(5, 3); g != nil {
		t.Errorf("empty range: Gaps(5, 3) = %v", g)
	}
}
