package projections

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestPartitionsApplyOrder: the same log of six partitions projected
// live (each write applied before the next: the log's order), caught up
// from the whole log at once (the partitions interleaved as their readers
// deliver) and rebuilt (one partition after the other) answers user-scope
// search alike, scores and order (the fixture's messages score alike but
// for the recency boost and the ties), and has the same digest.
func TestPartitionsApplyOrder(t *testing.T) {
	l := partitionedFixture(t)
	js, log := partitionedJS(t, testLogPartitions)
	live, p := startProjection(t, js, testLogPartitions)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lasts := make([]uint64, testLogPartitions)
	for _, r := range l.recs {
		part, seq := publishOne(t, ctx, log, r)
		lasts[part] = seq
		if err := p.WaitForAll(ctx, lasts); err != nil {
			t.Fatal(err)
		}
	}
	caught, pc := startProjection(t, js, testLogPartitions)
	if err := pc.WaitForAll(ctx, lasts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rebuilt.db")
	if _, err := RebuildPartitions(ctx, js, events.StreamName, testLogPartitions, path, testCodec, nil); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()

	want, err := live.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []struct {
		name string
		s    *Store
	}{{"caught up", caught}, {"rebuilt", rebuilt}} {
		for s := range 18 {
			sid := fmt.Sprintf("s%d", s)
			for _, q := range []string{"blue door code", "timeout seconds", "round of the door"} {
				for _, limit := range []int{3, 10, 20} {
					h1, err1 := live.Search(sid, memoryv1.SearchScope_SEARCH_SCOPE_USER, q, limit)
					h2, err2 := other.s.Search(sid, memoryv1.SearchScope_SEARCH_SCOPE_USER, q, limit)
					if err1 != nil || err2 != nil || len(h1) == 0 {
						t.Fatalf("%s: Search(%s, %q, %d): %d hits (%v, %v)", other.name, sid, q, limit, len(h1), err1, err2)
					}
					if d := diffHits(h1, h2); d != "" {
						t.Fatalf("%s: user-scope Search(%s, %q, %d): %s", other.name, sid, q, limit, d)
					}
				}
			}
		}
		got, err := other.s.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if d := VerifyDigests(want, got); d != nil {
			t.Fatalf("%s: digests differ from the live projection's: %v", other.name, d)
		}
	}
}

// diffHits describes the first difference of two hit lists (session,
// message and score), "" when equal.
func diffHits(a, b []*memoryv1.SearchHit) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d vs %d hits", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.GetSessionId() != y.GetSessionId() || x.GetMessage().GetId() != y.GetMessage().GetId() || x.GetScore() != y.GetScore() {
			return fmt.Sprintf("hit %d: %s %s %v vs %s %s %v", i,
				x.GetSessionId(), x.GetMessage().GetId(), x.GetScore(), y.GetSessionId(), y.GetMessage().GetId(), y.GetScore())
		}
	}
	return ""
}

// TestMessageTimes: the two times the age of a document is read from, as
// proto.Unmarshal reads them.
func TestMessageTimes(t *testing.T) {
	for _, m := range []*memoryv1.Message{
		{},
		{Id: "m1", Seq: 3, Content: "x", CreatedUnixNano: 5},
		{Id: "m2", Content: "said", CreatedUnixNano: -7, SaidUnixNano: 1_700_000_000_000_000_001, Name: "Al", ToolCalls: []*memoryv1.ToolCall{{Id: "c"}}},
	} {
		v, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		created, said, err := messageTimes(v)
		if err != nil || created != m.GetCreatedUnixNano() || said != m.GetSaidUnixNano() {
			t.Fatalf("messageTimes(%v) = %d, %d, %v", m, created, said, err)
		}
	}
	if _, _, err := messageTimes([]byte{0x50}); err == nil {
		t.Fatal("a truncated message read without error")
	}
}

// BenchmarkSearchUserAge: the queries of BenchmarkSearch in USER scope,
// ranked as a projection of one stream does (documents ordered by doc id)
// and as one of a log in partitions does (by age: one read of the
// document and its message per candidate, search_age.go), beside plain
// BM25 (the engine's ranking alone), alternately in one run.
func BenchmarkSearchUserAge(b *testing.B) {
	s := benchStore(b, *benchSearchDocs)
	for _, v := range []struct {
		name  string
		parts int64
		opts  SearchOptions
	}{{"raw-plain-bm25", 1, SearchOptions{Plain: true}}, {"doc-id", 1, SearchOptions{}}, {"age", testLogPartitions, SearchOptions{}}} {
		b.Run(v.name, func(b *testing.B) {
			s.logPartitions.Store(v.parts) // the ranking reads it; nothing is written
			defer s.logPartitions.Store(1)
			rng := rand.New(rand.NewPCG(3, 3))
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				q := benchWords[rng.IntN(len(benchWords))]
				for j := rng.IntN(3); j > 0; j-- {
					q += " " + benchWords[rng.IntN(len(benchWords))]
				}
				t0 := time.Now()
				if _, err := s.SearchWith(fmt.Sprintf("s%03d", rng.IntN(100)), memoryv1.SearchScope_SEARCH_SCOPE_USER, q, 10, v.opts); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			reportPercentiles(b, lat)
		})
	}
}
