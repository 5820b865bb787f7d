package swap

import (
	"math"
	"testing"
)

// TestBM25HandComputed scores a three-document corpus and compares with
// numbers worked out by hand (k1 = 1.2, b = 0.75).
//
//	D1 "error 3706 error"     → error:2 3706:1          |D1| = 3
//	D2 "disk error"           → disk:1 error:1          |D2| = 2
//	D3 "what broke the disk"  → what broke the disk:1   |D3| = 4
//
//	N = 3, avgdl = (3+2+4)/3 = 3
//	query "error 3706 disk"
//	df(error) = 2: idf = ln(1 + (3-2+0.5)/(2+0.5)) = ln(1.6)  = 0.47000362924573563
//	df(disk)  = 2: idf = ln(1.6)                              = 0.47000362924573563
//	df(3706)  = 1: idf = ln(1 + (3-1+0.5)/(1+0.5)) = ln(8/3)  = 0.9808292530117262
//
//	length factor K(D) = k1·(1 − b + b·|D|/avgdl)
//	K(D1) = 1.2·(0.25 + 0.75·3/3) = 1.2
//	K(D2) = 1.2·(0.25 + 0.75·2/3) = 0.9
//	K(D3) = 1.2·(0.25 + 0.75·4/3) = 1.5
//
//	D1: error tf=2: 2·2.2/(2+1.2) = 1.375 → 1.375·ln(1.6) = 0.6462549902128865
//	    3706  tf=1: 1·2.2/(1+1.2) = 1     → ln(8/3)       = 0.9808292530117262
//	    score(D1) = 1.6270842432246126
//	D2: error tf=1: 2.2/1.9 = 1.1578947… → 0.5442147286003255
//	    disk  tf=1: same                  → 0.5442147286003255
//	    score(D2) = 1.088429457200651
//	D3: disk  tf=1: 2.2/2.5 = 0.88       → 0.88·ln(1.6) = 0.4136031937362474
//	    score(D3) = 0.4136031937362474
//
// Ranking: D1 > D2 > D3.
func TestBM25HandComputed(t *testing.T) {
	const tol = 1e-9
	p := DefaultBM25()
	if p.K1 != 1.2 || p.B != 0.75 {
		t.Fatalf("DefaultBM25() = %+v", p)
	}

	docs := []string{"error 3706 error", "disk error", "what broke the disk"}
	type doc struct {
		tf  map[string]uint32
		len uint32
	}
	var corpus []doc
	var total uint64
	for _, text := range docs {
		tf, n := TermFreqs(text)
		corpus = append(corpus, doc{tf, n})
		total += uint64(n)
	}
	n := uint64(len(corpus))
	avgdl := float64(total) / float64(n)
	if avgdl != 3 {
		t.Fatalf("avgdl = %v, want 3", avgdl)
	}

	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.17g, want %.17g", what, got, want)
		}
	}
	near("idf(df=2)", p.IDF(3, 2), 0.47000362924573563)
	near("idf(df=1)", p.IDF(3, 1), 0.9808292530117262)
	near("term D1 error", p.TermScore(2, 3, avgdl, p.IDF(3, 2)), 0.6462549902128865)
	near("term D2 error", p.TermScore(1, 2, avgdl, p.IDF(3, 2)), 0.5442147286003255)
	near("term D3 disk", p.TermScore(1, 4, avgdl, p.IDF(3, 2)), 0.4136031937362474)

	query := QueryTerms("error 3706 disk")
	top := NewTopK(10)
	var scores []float64
	for i, d := range corpus {
		var s float64
		for _, term := range query {
			df := uint64(0)
			for _, o := range corpus {
				if o.tf[term] > 0 {
					df++
				}
			}
			s += p.TermScore(d.tf[term], d.len, avgdl, p.IDF(n, df))
		}
		scores = append(scores, s)
		top.Offer(Hit{DocID: uint64(i + 1), Score: s})
	}
	near("score(D1)", scores[0], 1.6270842432246126)
	near("score(D2)", scores[1], 1.088429457200651)
	near("score(D3)", scores[2], 0.4136031937362474)

	got := top.Sorted()
	if len(got) != 3 || got[0].DocID != 1 || got[1].DocID != 2 || got[2].DocID != 3 {
		t.Errorf("ranking = %+v, want D1, D2, D3", got)
	}
}

func TestBM25EdgeCases(t *testing.T) {
	p := DefaultBM25()
	if s := p.TermScore(0, 10, 5, 2); s != 0 {
		t.Errorf("tf=0 scores %v, want 0", s)
	}
	// df > n is clamped to n: idf = ln(1 + 0.5/(n+0.5)), still positive.
	if got, want := p.IDF(3, 7), p.IDF(3, 3); got != want || got <= 0 {
		t.Errorf("IDF(3, 7) = %v, want IDF(3, 3) = %v > 0", got, want)
	}
	if got, want := p.IDF(0, 0), math.Log(2); math.Abs(got-want) > 1e-12 {
		t.Errorf("IDF(0, 0) = %v, want ln 2", got)
	}
	// avgdl 0 (empty corpus statistics): no length normalization, finite.
	if got, want := p.TermScore(1, 0, 0, 1), 1.0; math.Abs(got-want) > 1e-12 {
		t.Errorf("TermScore with avgdl=0 = %v, want %v", got, want)
	}
	// More occurrences never score less; a longer document never scores more.
	for tf := uint32(1); tf < 50; tf++ {
		if p.TermScore(tf+1, 100, 50, 1) < p.TermScore(tf, 100, 50, 1) {
			t.Fatalf("score decreases from tf=%d", tf)
		}
		if p.TermScore(3, 10*tf+10, 50, 1) > p.TermScore(3, 10*tf, 50, 1) {
			t.Fatalf("score increases with length at %d", 10*tf)
		}
	}
}
