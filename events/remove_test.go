package events

import "testing"

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
