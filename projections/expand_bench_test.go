package projections

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// everydayWords are members of swap's related-word groups (related.txt),
// mixed into the benchmark texts so that expansions have postings to read.
var everydayWords = []string{
	"guitar", "piano", "violin", "dog", "cat", "puppy", "sister", "brother", "grandma", "trip", "flight",
	"vacation", "job", "company", "offer", "wrist", "ankle", "knee", "pottery", "painting", "salsa", "tango",
	"hiking", "running", "yoga", "bread", "pasta", "doctor", "hospital", "wedding", "birthday",
}

// expandingQueries name categories (heads) whose members are in the texts.
var expandingQueries = []string{
	"which instrument did she pick up", "what pet do they have", "which sibling visited",
	"where did she travel last month", "what body part did he hurt", "what job did she accept",
	"which dance class", "what hobby did he start", "what sport does she do", "what food did they cook",
}

// BenchmarkSearchExpansion: questions that name a category, ranked by the
// default ranking with and without related-word expansion, at the API's
// limit (10) and at the assembler's (100), alternately in one run over a
// corpus of 100k messages holding the categories' members.
func BenchmarkSearchExpansion(b *testing.B) {
	s := openTestStore(b)
	rng := rand.New(rand.NewPCG(5, 5))
	l := newLogBuilder(b)
	for i := 0; i < 100; i++ {
		l.create(fmt.Sprintf("s%03d", i), fmt.Sprintf("u%d", i%10), "")
	}
	for done := 0; done < *benchSearchDocs; done += 4 {
		texts := make([]string, 4)
		for j := range texts {
			w := strings.Fields(benchText(rng))
			for k := rng.IntN(3); k >= 0; k-- {
				w[rng.IntN(len(w))] = everydayWords[rng.IntN(len(everydayWords))]
			}
			texts[j] = strings.Join(w, " ")
		}
		l.appendMsgs(fmt.Sprintf("s%03d", rng.IntN(100)), texts...)
		if len(l.recs) >= 512 {
			mustApply(b, s, l.recs)
			l.recs = l.recs[:0]
		}
	}
	mustApply(b, s, l.recs)
	noExpand := defaultRanking
	noExpand.expand = 0
	for _, v := range []struct {
		name  string
		rk    ranking
		limit int
	}{{"expand-off-10", noExpand, 10}, {"expand-on-10", defaultRanking, 10}, {"expand-off-100", noExpand, 100}, {"expand-on-100", defaultRanking, 100}} {
		b.Run(v.name, func(b *testing.B) {
			qrng := rand.New(rand.NewPCG(6, 6))
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				q := expandingQueries[qrng.IntN(len(expandingQueries))]
				t0 := time.Now()
				if _, err := s.search(fmt.Sprintf("s%03d", qrng.IntN(100)), memoryv1.SearchScope_SEARCH_SCOPE_SESSION, q, v.limit, v.rk); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			reportPercentiles(b, lat)
		})
	}
}
