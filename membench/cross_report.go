package membench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Markdown writes the cross-session mode's tables.
func (r *CrossReport) Markdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	c := r.Config
	p("## Cross-session mode: %s\n\n", r.Source)
	p("%d conversations: %s turns (%s tokens) in %d sittings, each sitting a session of the conversation's user and agent (budget %d), terminated and consolidated "+
		"(%d entries written); %d questions (", r.Dialogues, thousands(r.Turns), thousands(r.Tokens), r.Sittings, c.SittingBudget, r.Entries, r.Questions)
	for i, cat := range r.Categories {
		if i > 0 {
			p(", ")
		}
		p("%d %s", r.ByCat[cat], cat)
	}
	p("), each the first user message of a NEW session of that user at each budget, the context read rendered for OpenAI; "+
		"each question session erased once read. A real node (embedded NATS, the Go client). Ingest %s, questions %s.\n\n",
		r.Ingest.Round(time.Second), r.Ask.Round(time.Second))

	p("### (x1) Evidence in the new session's context\n\n")
	p("*evidence*: every evidence turn's text is in the context (*any*: at least one); *answer*: every content word of the gold answer is a word of the context; "+
		"*dated*: of the temporal questions' evidence turns in the context, the share whose sitting's day is shown: printed near the turn, or the last date printed before it is its day (a transcript's date line). "+
		"RAG: SQLite FTS5 bm25() hits for the question over every turn of the user's history fill the room in rank order, each with its day. "+
		"Search tool: agentmem's SEARCH_SCOPE_USER search, top %d, as a tool result while it fits. The full transcript ignores the budget (ceiling).\n\n", c.SearchK)
	p("| budget | memory | evidence | any evidence | answer | dated (temporal) |")
	for _, cat := range r.Categories {
		p(" %s |", cat)
	}
	p(" mean tokens |\n|---:|---|---:|---:|---:|---:|%s---:|\n", strings.Repeat("---:|", len(r.Categories)))
	for _, row := range r.Rows {
		p("| %d | %s | %s | %s | %s | %s |", row.Budget, row.Memory, pct(row.All.Evidence), pct(row.All.AnyEvidence), pct(row.All.Answer), pct(row.All.Dated))
		for _, cat := range r.Categories {
			if s := row.ByCat[cat]; s != nil {
				p(" %s |", pct(s.Evidence))
			} else {
				p(" – |")
			}
		}
		p(" %.0f |\n", row.MeanUsed)
	}
	p("\nPer category: evidence in the context (above). Answer words per category:\n\n| budget | memory |")
	for _, cat := range r.Categories {
		p(" %s |", cat)
	}
	p("\n|---:|---|%s\n", strings.Repeat("---:|", len(r.Categories)))
	for _, row := range r.Rows {
		p("| %d | %s |", row.Budget, row.Memory)
		for _, cat := range r.Categories {
			if s := row.ByCat[cat]; s != nil {
				p(" %s |", pct(s.Answer))
			} else {
				p(" – |")
			}
		}
		p("\n")
	}

	p("\n### (x2) Where agentmem's evidence went\n\n")
	p("One count per evidence turn of every question, in the new session's context: in its own messages (L1 or promoted), in the recalled section (another session's turn), "+
		"a memory entry consolidated from the turn in the memory section, a summary holding the answer's words; otherwise found but not chosen "+
		"(among the user-scope search's top %d for the question, or recalled in the context of the largest budget, %d: the node searches earlier sessions as deep as the budget can use), or never found.\n\n", c.SearchK, c.Budgets[len(c.Budgets)-1])
	p("| budget | L1 | recalled | memory entry | summary | found, not chosen | never found |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range r.Where {
		n := w.Total()
		p("| %d | %s | %s | %s | %s | %s | %s |\n", w.Budget, pct(Share{w.L1, n}), pct(Share{w.Recalled, n}), pct(Share{w.Memory, n}),
			pct(Share{w.Summary, n}), pct(Share{w.NotChosen, n}), pct(Share{w.NotFound, n}))
	}
	if c.Repeats > 1 {
		p("\n### (x3) Determinism\n\nEach question asked again in another new session at the same budget, after the first was erased: contexts that differ.\n\n")
		p("| budget | differ |\n|---:|---:|\n")
		for i, d := range r.Differ {
			p("| %d | %d of %d |\n", c.Budgets[i], d.Hit, d.N)
		}
		if len(r.Differing) > 0 {
			p("\nWhere they part (first %d):\n\n", len(r.Differing))
			for _, d := range r.Differing {
				p("- %s\n", d)
			}
		}
	}
	p("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
