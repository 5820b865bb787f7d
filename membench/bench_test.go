package membench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkMemoryQuality runs the whole benchmark (DefaultConfig, about half
// a minute on 2 cores) once per iteration and reports its figures as
// metrics; ns/op is the time of one full run. With -v the markdown tables
// are printed too. `make bench-memory` runs the command instead, which
// prints the same tables.
//
//	go test -run '^$' -bench MemoryQuality -benchtime 1x ./membench/
//
// Metric names: end%/ckpt%-<budget>-<memory> (answer in the context, at the
// end / at checkpoints), R@<k>%-<engine>, kept%/ratio-<span>-<limit> for
// the summarizer, append-µs/context-µs-<budget>-<memory> (means).
func BenchmarkMemoryQuality(b *testing.B) {
	cfg := DefaultConfig()
	b.Logf("seed %d", cfg.Conversation.Seed)
	var rep *Report
	for b.Loop() {
		var err error
		if rep, err = Run(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
	if testing.Verbose() {
		_ = rep.Markdown(os.Stdout)
	}
	for _, c := range rep.Context {
		b.ReportMetric(c.End.Pct(), fmt.Sprintf("end%%-%d-%s", c.Budget, short(c.Memory)))
		b.ReportMetric(c.Checkpoints.Pct(), fmt.Sprintf("ckpt%%-%d-%s", c.Budget, short(c.Memory)))
	}
	for _, s := range rep.Search {
		for i, k := range s.K {
			b.ReportMetric(s.All[i].Pct(), fmt.Sprintf("R@%d%%-%s", k, short(s.Engine)))
		}
	}
	for _, s := range append(append([]SummaryRow{}, rep.Summarizer...), rep.RunSummaries...) {
		name := short(s.Span) + "-" + short(s.Limit)
		b.ReportMetric(s.Retention()*100, "kept%-"+name)
		b.ReportMetric(s.Ratio(), "ratio-"+name)
	}
	for _, l := range rep.Latency {
		b.ReportMetric(float64(l.Append.Mean)/float64(time.Microsecond), fmt.Sprintf("append-µs-%d-%s", l.Budget, short(l.Memory)))
		b.ReportMetric(float64(l.Context.Mean)/float64(time.Microsecond), fmt.Sprintf("context-µs-%d-%s", l.Budget, short(l.Memory)))
	}
}

// short turns a row label into a metric name part without spaces.
func short(s string) string {
	switch {
	case strings.HasPrefix(s, "agentmem ("):
		return strings.NewReplacer(" ", "", ",", "").Replace(strings.TrimSuffix(strings.TrimPrefix(s, "agentmem ("), ")"))
	case s == "sliding window":
		return "window"
	case strings.HasPrefix(s, "agentmem BM25"):
		return "agentmem"
	case strings.HasPrefix(s, "SQLite FTS5"):
		return "fts5"
	case strings.HasPrefix(s, "model"):
		return "model"
	case strings.HasPrefix(s, "covered/"):
		return strings.TrimPrefix(strings.Fields(s)[0], "covered/") + "x"
	case strings.HasPrefix(s, "made in the run"):
		f := strings.Fields(strings.NewReplacer("(", " ", ")", " ", ",", " ").Replace(s))
		return "run" + strings.Join(f[5:], "") // "made in the run (budget N, memory)"
	}
	return strings.ReplaceAll(strings.Fields(s)[0], " ", "") + "msg"
}
