package membench

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentmem/agentmem/internal/dialoggen"
)

// Markdown writes the question mode's tables.
func (r *QuestionReport) Markdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	c := r.Config
	cats := r.Categories
	p("## Question mode: %s\n\n", r.Source)
	p("%d conversations: %s messages (%s tokens) in %d sittings; %d questions asked after the whole conversation (",
		r.Conversations, thousands(r.Messages), thousands(r.Tokens), r.Sittings, r.Questions)
	for i, cat := range cats {
		if i > 0 {
			p(", ")
		}
		p("%d %s", r.ByCat[cat], cat)
	}
	p("), each appended for good as a user message, the context read right after")
	if r.Continuity > 0 {
		p("; %d continuity questions asked mid-conversation on a copy", r.Continuity)
	}
	p(".\n\n")

	p("### (q1) Evidence in the context\n\n")
	answer := "*answer*: the context holds the answer strings (for time questions also the sitting's date, as the recalled header or the first turn of the sitting shows it). "
	if r.AnswerNote != "" {
		answer = "*answer*: " + r.AnswerNote + " "
	}
	p("*evidence*: every evidence turn's content is verbatim in the context (*any*: at least one, for multi-turn evidence); %s"+
		"*dated*: of the temporal questions whose evidence is all there, every evidence turn's day shown: printed near it, or the last date printed before it is its day (a transcript's date line). agentmem: a session with the server's defaults, candidates from the projection search; the baselines get the same transcript, questions included. "+
		"RAG x/y: the newest turns fill x %% of the budget, FTS5 bm25() hits for the question the rest, in conversation order. The full transcript ignores the budget (ceiling).\n\n", answer)
	p("| budget | memory | evidence | any evidence | answer |")
	for _, cat := range cats {
		p(" %s |", cat)
	}
	p(" stale (corrections) | dated (temporal) | mean tokens |\n|---:|---|---:|---:|---:|%s---:|---:|---:|\n", strings.Repeat("---:|", len(cats)))
	for _, row := range r.Rows {
		p("| %d | %s | %s | %s | %s |", row.Budget, row.Memory, pct(row.All.Evidence), pct(row.All.AnyEvidence), pct(row.All.Answer))
		for _, cat := range cats {
			s := row.ByCat[cat]
			if s == nil {
				p(" – |")
				continue
			}
			p(" %s |", pct(s.Evidence))
		}
		p(" %s | %s | %.0f |\n", pct(row.Stale), pct(row.Dated), row.MeanUsed)
	}
	p("\nPer category: evidence in the context. Answers per category:\n\n| budget | memory |")
	for _, cat := range cats {
		p(" %s |", cat)
	}
	p("\n|---:|---|%s\n", strings.Repeat("---:|", len(cats)))
	for _, row := range r.Rows {
		p("| %d | %s |", row.Budget, row.Memory)
		for _, cat := range cats {
			if s := row.ByCat[cat]; s != nil {
				p(" %s |", pct(s.Answer))
			} else {
				p(" – |")
			}
		}
		p("\n")
	}

	p("\n### (q2) Where agentmem's evidence went\n\n")
	p("One count per evidence turn of every question: verbatim in L1 (or promoted), in the recalled section, only in a summary (an L1/L2 summary holds its answer string), " +
		"among the search candidates of the question but not chosen, never among them.\n\n")
	p("| budget | L1 | recalled | summary only | candidate, not chosen | not among the candidates |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range r.Where {
		n := w.Total()
		p("| %d | %s | %s | %s | %s | %s |\n", w.Budget, pct(Share{w.L1, n}), pct(Share{w.Recalled, n}), pct(Share{w.Summary, n}), pct(Share{w.NotChosen, n}), pct(Share{w.NotFound, n}))
	}

	if r.Continuity > 0 {
		p("\n### (q3) Continuity: the last turns and the task in progress\n\n")
		p("Asked right after a lookup (tool call and result), a suggestion and a plan, on a copy of the session: *last-turns* (what was just suggested), " +
			"*tool-result* (what else the lookup returned), *plan* (a step of the plan). Share whose evidence / answer is in the context.\n\n")
		p("| budget | memory | evidence | answer |")
		for _, cat := range dialoggen.ContinuityCategories {
			p(" %s |", cat)
		}
		p("\n|---:|---|---:|---:|%s\n", strings.Repeat("---:|", len(dialoggen.ContinuityCategories)))
		for _, row := range r.Cont {
			p("| %d | %s | %s | %s |", row.Budget, row.Memory, pct(row.All.Evidence), pct(row.All.Answer))
			for _, cat := range dialoggen.ContinuityCategories {
				if s := row.ByCat[cat]; s != nil {
					p(" %s |", pct(s.Answer))
				} else {
					p(" – |")
				}
			}
			p("\n")
		}
	}
	p("\n### (q4) Search: recall of the evidence turn\n\n")
	p("The question is the query, over every message said before it (earlier questions included); a hit: an evidence turn within the first k. MRR within the first %d.\n\n", c.RecallK[len(c.RecallK)-1])
	p("| engine |")
	for _, k := range c.RecallK {
		p(" recall@%d |", k)
	}
	p(" MRR |")
	for _, cat := range cats {
		p(" %s @%d |", cat, c.RecallK[len(c.RecallK)-1])
	}
	p("\n|---|%s\n", strings.Repeat("---:|", len(c.RecallK)+1+len(cats)))
	for _, s := range r.Search {
		p("| %s |", s.Engine)
		for _, a := range s.All {
			p(" %s |", pct(a))
		}
		p(" %.3f |", s.MRR)
		for _, cat := range cats {
			if sh := s.ByCat[cat]; sh != nil {
				p(" %s |", pct(sh[len(sh)-1]))
			} else {
				p(" – |")
			}
		}
		p("\n")
	}
	p("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// pct is a share as a fraction with two decimals ("0.51"), "–" when empty.
func pct(s Share) string {
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", ratio(s.Hit, s.N))
}
