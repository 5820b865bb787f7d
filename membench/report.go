package membench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Report is the result of a Run. Everything but Latency is a function of
// the Config (same seed, same figures).
type Report struct {
	Seed                                   uint64
	Messages, Tokens, Appends, Sittings    int
	ToolCalls                              int
	Facts, CorrectedFacts                  int
	Checkpoints, Questions, FinalQuestions int
	CorrectedQuestions                     int // questions whose fact had a correction before they were asked
	Budgets                                []int
	Context                                []ContextRow
	Search                                 []SearchRow
	Summarizer                             []SummaryRow // the summarizer alone, on spans of the conversation
	RunSummaries                           []SummaryRow // the summaries the default profile made in the run, per budget
	Latency                                []LatencyRow
}

// Share is Hit of N.
type Share struct{ Hit, N int }

func (s *Share) add(hit bool) {
	s.N++
	if hit {
		s.Hit++
	}
}

// Pct is the share in percent (0 when N is 0).
func (s Share) Pct() float64 { return 100 * ratio(s.Hit, s.N) }

func (s Share) String() string {
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", s.Pct(), s.Hit, s.N)
}

// ContextRow is one memory at one budget.
type ContextRow struct {
	Budget int
	Memory string
	// End: questions of the final checkpoint (every fact); Checkpoints:
	// questions asked at the other checkpoints. Hit: an answer string is in
	// the context.
	End, Checkpoints Share
	// Stale: of the questions about a corrected fact, those whose context
	// holds a superseded value and not the current one.
	Stale Share
	// ByDistance: all questions by the tokens said after the answer turn,
	// cut at the budgets (< Budgets[0], ..., >= Budgets[last]).
	ByDistance []Share
	// Forgotten: all questions whose answer turn the memory no longer
	// keeps verbatim when asked; Hit: the answer is in the context anyway
	// (in a summary, or recalled).
	Forgotten Share
	// Rejected appends (413: agentmem could not hold them).
	Rejected int
	// Mean make-up of the context over the checkpoints, in tokens.
	MeanUsed, MeanVerbatim, MeanSummaries, MeanOther, MeanMessages float64
}

// SearchRow is one search engine: recall@k of the answer turn, for each k of
// K, over all questions and over the final ones; MRR over all questions
// (reciprocal rank of the answer turn within the largest k, 0 if absent).
type SearchRow struct {
	Engine   string
	K        []int
	All, End []Share
	MRR      float64
	rr       float64
}

// Timing is a latency distribution.
type Timing struct{ Mean, P50, P99 time.Duration }

// LatencyRow is agentmem's in-process cost at one budget: Append is
// DecideAppend + Apply of one append request, Context the first Context()
// after it (built, not cached).
type LatencyRow struct {
	Budget          int
	Memory          string
	Appends         int
	Append, Context Timing
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }

func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Markdown writes the report as markdown tables. Timings are in their own
// section: they are the only figures that vary between runs.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## agentmem memory benchmark (seed %d)\n\n", r.Seed)
	p("Conversation: %s messages (%s tokens) in %d sittings, %s appends, %d tool calls; %d planted facts, %d of them corrected at least once; "+
		"%d checkpoints asking %d questions (%d at the end, one per fact; %d about a fact corrected before the question).\n\n",
		thousands(r.Messages), thousands(r.Tokens), r.Sittings, thousands(r.Appends), r.ToolCalls, r.Facts, r.CorrectedFacts,
		r.Checkpoints, r.Questions, r.FinalQuestions, r.CorrectedQuestions)

	p("### (a) Answer in the context\n\n")
	p("Share of questions whose answer string is in the context the LLM would receive when the question is asked. " +
		"*end*: every fact, asked after the last message; *checkpoints*: samples asked along the way; " +
		"*stale*: of the questions about corrected facts, the context shows an old value and not the current one.\n\n")
	p("*answer no longer verbatim*: of all questions whose answer turn is no longer verbatim in the context when asked (L1 or promoted; for the window: outside it), " +
		"the share whose answer is in the context anyway (a summary, or the recalled section). " +
		"*+ recall*: the context assembler on (the default of a new session), recalling for each user message and for the question itself.\n\n")
	p("| budget | memory | end | checkpoints | answer no longer verbatim | stale | rejected appends | mean tokens used | verbatim msgs | verbatim / summaries / ROM+kernel tokens |\n")
	p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, c := range r.Context {
		p("| %d | %s | %s | %s | %s | %s | %d | %.0f | %.1f | %.0f / %.0f / %.0f |\n", c.Budget, c.Memory, c.End, c.Checkpoints, c.Forgotten, c.Stale,
			c.Rejected, c.MeanUsed, c.MeanMessages, c.MeanVerbatim, c.MeanSummaries, c.MeanOther)
	}
	p("\nBy distance: all questions (end and checkpoints) by how many tokens were said after the answer turn.\n\n")
	p("| budget | memory |")
	for i := range len(r.Budgets) + 1 {
		p(" %s |", distanceLabel(r.Budgets, i))
	}
	p("\n|---:|---|%s\n", strings.Repeat("---:|", len(r.Budgets)+1))
	for _, c := range r.Context {
		p("| %d | %s |", c.Budget, c.Memory)
		for _, s := range c.ByDistance {
			p(" %s |", s)
		}
		p("\n")
	}

	p("\n### (b) Search: recall of the answer turn\n\n")
	p("The question's text is the query, over the messages said before it; a hit is the message holding the (latest) answer ranked within the first k. ")
	p("MRR: mean reciprocal rank of that message within the first %d.\n\n", r.Search[0].K[len(r.Search[0].K)-1])
	p("| engine |")
	for _, k := range r.Search[0].K {
		p(" recall@%d |", k)
	}
	for _, k := range r.Search[0].K {
		p(" end recall@%d |", k)
	}
	p(" MRR |\n|---|%s---:|\n", strings.Repeat("---:|", 2*len(r.Search[0].K)))
	for _, s := range r.Search {
		p("| %s |", s.Engine)
		for _, a := range s.All {
			p(" %s |", a)
		}
		for _, a := range s.End {
			p(" %s |", a)
		}
		p(" %.3f |\n", s.MRR)
	}

	p("\n### (c) Summarizer (extractive, the default)\n\n")
	p("Compression: tokens of the summarized entries / tokens of the summaries (both as the model counts them). " +
		"Key facts: fact values stated in the summarized messages; kept: still in the summary's text. " +
		"The summarizer alone runs on consecutive spans of the conversation. The rows *made in the run* are the summaries the session model made " +
		"with the default profile: compression of each step (its covered_tokens, older summaries included, / its tokens), " +
		"and the facts of the messages it condensed for the first time.\n\n")
	p("| span | limit | summaries | messages covered (mean) | compression | key facts kept |\n|---|---|---:|---:|---:|---:|\n")
	for _, s := range append(append([]SummaryRow{}, r.Summarizer...), r.RunSummaries...) {
		p("| %s | %s | %d | %.1f | %.1f× | %s |\n", s.Span, s.Limit, s.Spans, ratio(s.Messages, s.Spans), s.Ratio(), Share{s.Kept, s.Facts})
	}

	p("\n### (d) Latency, in process (µs per op; varies run to run)\n\n")
	p("append: DecideAppend + Apply of one append request, plus, with recall, the candidate search (Store.Search) of an append holding a user message; " +
		"context: the first Context() after it (built, not cached).\n\n")
	p("| budget | memory | appends | append mean | p50 | p99 | context mean | p50 | p99 |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Latency {
		p("| %d | %s | %d | %s | %s | %s | %s | %s | %s |\n", l.Budget, l.Memory, l.Appends,
			us(l.Append.Mean), us(l.Append.P50), us(l.Append.P99), us(l.Context.Mean), us(l.Context.P50), us(l.Context.P99))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func distanceLabel(budgets []int, i int) string {
	switch {
	case i == 0:
		return fmt.Sprintf("< %d tokens ago", budgets[0])
	case i == len(budgets):
		return fmt.Sprintf("≥ %d", budgets[i-1])
	default:
		return fmt.Sprintf("%d–%d", budgets[i-1], budgets[i]-1)
	}
}
