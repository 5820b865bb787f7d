package membench

import (
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// SummaryRow is the summarizer measured on one kind of span.
type SummaryRow struct {
	// Span says what was summarized; Limit how the token limit was set.
	Span, Limit string
	Spans       int
	// Messages is the messages the summaries cover, summed over spans.
	Messages int
	// Covered and Summary are the tokens of the summarized messages and of
	// the summaries (stored counts: text plus MessageOverheadTokens).
	Covered, Summary int
	// Facts is the key facts the spans held (fact values stated in them,
	// each once per span), Kept how many of those the summaries still hold.
	Facts, Kept int
}

// Ratio is Covered / Summary.
func (r SummaryRow) Ratio() float64 { return ratio(r.Covered, r.Summary) }

// Retention is Kept / Facts.
func (r SummaryRow) Retention() float64 { return ratio(r.Kept, r.Facts) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// factIndex holds the fact values each message (by index) mentions.
type factIndex map[int][]string // turn -> values mentioned there

func newFactIndex(conv *convgen.Conversation) factIndex {
	ix := factIndex{}
	for _, f := range conv.Facts {
		for _, m := range f.Mentions {
			ix[m.Turn] = append(ix[m.Turn], m.Value)
		}
	}
	return ix
}

// count returns how many distinct fact values the turns mention, and how
// many of them text holds.
func (ix factIndex) count(turns []int, text string) (facts, kept int) {
	seen := map[string]bool{}
	for _, t := range turns {
		for _, v := range ix[t] {
			if seen[v] {
				continue
			}
			seen[v] = true
			facts++
			if strings.Contains(text, v) {
				kept++
			}
		}
	}
	return facts, kept
}

// measureSummarizer runs the default summarizer (segmented.Extractive) on
// consecutive, non-overlapping spans of n messages, for each n in spans and
// each limit: the model's own (min(summary_max_tokens, covered − overhead −
// 1), as compress.go sets it) and the limits that would give 5× and 10×
// compression.
func measureSummarizer(conv *convgen.Conversation, tok segmented.Tokenizer, spans []int) []SummaryRow {
	ix := newFactIndex(conv)
	sum := segmented.Extractive{}
	type limitFn struct {
		name string
		fn   func(covered int) int
	}
	limits := []limitFn{
		{fmt.Sprintf("model: min(%d, covered−%d)", segmented.DefaultSummaryMaxTokens, segmented.MessageOverheadTokens+1), func(c int) int {
			return min(segmented.DefaultSummaryMaxTokens, c-segmented.MessageOverheadTokens-1)
		}},
		{"covered/5 (5× target)", func(c int) int { return c / 5 }},
		{"covered/10 (10× target)", func(c int) int { return c / 10 }},
	}
	var rows []SummaryRow
	for _, n := range spans {
		for _, lim := range limits {
			row := SummaryRow{Span: fmt.Sprintf("%d messages", n), Limit: lim.name}
			for start := 0; start+n <= len(conv.Messages); start += n {
				entries := make([]*memoryv1.L1Entry, 0, n)
				turns := make([]int, 0, n)
				covered := 0
				for i := start; i < start+n; i++ {
					m := &conv.Messages[i]
					in := m.Input()
					entries = append(entries, &memoryv1.L1Entry{Entry: &memoryv1.L1Entry_Message{Message: &memoryv1.Message{
						Id: in.Id, Seq: uint64(i + 1), Role: in.Role, Content: in.Content, ToolCalls: in.ToolCalls, ToolCallId: in.ToolCallId,
					}}})
					turns = append(turns, i)
					covered += messageTokens(tok, m, before(conv.Messages, i))
				}
				text := sum.Summarize(entries, max(lim.fn(covered), 1), tok)
				row.Spans++
				row.Messages += n
				row.Covered += covered
				row.Summary += textTokens(tok, text)
				f, k := ix.count(turns, text)
				row.Facts += f
				row.Kept += k
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// runSummaries measures the summaries a session made during a run
// (L1Summarized and L1Evicted), each on what it condensed for the first
// time: Messages counts every message a summary covers (a summary that
// re-summarizes an older one covers that one's messages too); Covered and
// Summary are the stored covered_tokens (the L1 entries it replaced, older
// summaries included) and tokens, so Ratio is the compression of one step;
// Facts are the fact values of the messages no earlier summary covered (the
// ones condensed verbatim by this step), Kept those in its text.
func runSummaries(m *agentmemMemory, ix factIndex) SummaryRow {
	row := SummaryRow{Span: fmt.Sprintf("made in the run (budget %d, %s)", m.budget, strings.TrimSuffix(strings.TrimPrefix(m.name, "agentmem ("), ")")), Limit: "model"}
	seen := map[string]bool{}
	for _, s := range m.summaries {
		var fresh []int
		for _, id := range s.GetMessageIds() {
			if !seen[id] {
				seen[id] = true
				if i := convgen.ParseMessageID(id); i >= 0 {
					fresh = append(fresh, i)
				}
			}
		}
		row.Spans++
		row.Messages += len(s.GetMessageIds())
		row.Covered += int(s.GetCoveredTokens())
		row.Summary += int(s.GetTokens())
		f, k := ix.count(fresh, s.GetText())
		row.Facts += f
		row.Kept += k
	}
	return row
}
