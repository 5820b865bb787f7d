package swap

import "testing"

func BenchmarkTermFreqs(b *testing.B) {
	b.SetBytes(int64(len(message200)))
	b.ReportAllocs()
	for b.Loop() {
		TermFreqs(message200)
	}
}
