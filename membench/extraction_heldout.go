package membench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/membench/heldout"
)

// The held-out extraction table: the extractor on conversations written
// by hand apart from it (membench/heldout), one consolidation per sitting
// as the node runs it (the user's current facts passed in), the user's
// facts as gold:
//
//   - precision: of the facts extracted for the user's scope (episodes and
//     retractions aside) whose source turns the gold scores (a turn that
//     states facts, or a no-fact turn), those whose value matches a gold
//     value of their source turn. A fact read from a no-fact turn, or not
//     matching, is wrong; one read only from a turn the gold leaves
//     unscored (borderline on purpose) is counted apart;
//   - recall: gold facts (replaced ones included) some extracted fact of
//     their turn matches;
//   - corrections current: for each replaced fact, the newest value of its
//     chain is current in memory and its old value current nowhere;
//   - scripted: the small fixed case (the conversation named "scripted"):
//     its facts found, and whether memory holds its current values only.

// HeldOutExtractionRow is one extractor on the held-out conversations.
type HeldOutExtractionRow struct {
	Name string
	// Extracted: facts for the user's scope; Scored of them from scored
	// turns, Correct of those; FromNoFact: read from a no-fact turn;
	// Unscored: read only from turns the gold leaves unscored.
	Extracted, Scored, Correct, FromNoFact, Unscored int
	Facts, Found                                     int
	Replaced, Resolved                               int
	// The scripted case: facts found; current gold values current in
	// memory; replaced values still current.
	ScriptedFacts, ScriptedFound     int
	ScriptedCurrent, ScriptedPresent int
	ScriptedStale                    int
}

// HeldOutExtractionReport is the held-out extraction table.
type HeldOutExtractionReport struct {
	// Set names the conversations' directory in the title ("" is
	// membench/heldout).
	Set                            string
	Conversations, Sittings, Turns int
	Facts, Replaced, NoFactTurns   int
	Rows                           []HeldOutExtractionRow
	// Misses are a few gold facts the first extractor did not read.
	Misses []string
}

// heldOutMessages are sitting s of c as a session's consolidation reads
// them (message ids are the turn ids).
func heldOutMessages(c *heldout.Conversation, s int, seq *uint64) []consolidate.Message {
	var out []consolidate.Message
	for _, t := range c.Sittings[s].Turns {
		*seq++
		out = append(out, consolidate.Message{ID: t.ID, Seq: *seq, User: t.Speaker == "user", Text: t.Text})
	}
	return out
}

// RunHeldOutExtraction scores each extractor on convs.
func RunHeldOutExtraction(ctx context.Context, convs []heldout.Conversation, xs []Extractor) (*HeldOutExtractionReport, error) {
	if err := heldout.ValidateAll(convs); err != nil {
		return nil, err
	}
	rep := &HeldOutExtractionReport{Conversations: len(convs)}
	for i := range convs {
		c := &convs[i]
		rep.Sittings += len(c.Sittings)
		for _, s := range c.Sittings {
			rep.Turns += len(s.Turns)
		}
		rep.Facts += len(c.Facts)
		rep.NoFactTurns += len(c.NoFactTurns)
		for _, f := range c.Facts {
			if f.ReplacedBy != "" {
				rep.Replaced++
			}
		}
	}
	for xi, x := range xs {
		row := HeldOutExtractionRow{Name: x.Name()}
		for i := range convs {
			c := &convs[i]
			st := &memoryStore{}
			var seq uint64
			for s := range c.Sittings {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				fs, err := x.Extract(ctx, heldOutMessages(c, s, &seq), st.known())
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", x.Name(), c.Name, err)
				}
				for _, f := range fs {
					st.write(f)
				}
			}
			misses := scoreHeldOut(c, st, &row)
			if xi == 0 {
				for _, m := range misses {
					if len(rep.Misses) < 12 {
						rep.Misses = append(rep.Misses, c.Name+": "+m)
					}
				}
			}
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// userFact: a fact consolidation writes to the user's scope.
func userFact(f consolidate.Fact) bool { return f.Type != consolidate.Episodic && !f.Retract }

// scoreHeldOut adds what st holds for c to row; it returns the gold facts
// no extracted fact matched.
func scoreHeldOut(c *heldout.Conversation, st *memoryStore, row *HeldOutExtractionRow) []string {
	gold := map[string][]string{} // turn id -> values stated there
	for _, f := range c.Facts {
		gold[f.Turn] = append(gold[f.Turn], f.Value)
	}
	noFact := map[string]bool{}
	for _, id := range c.NoFactTurns {
		noFact[id] = true
	}
	for _, f := range st.all {
		if !userFact(f) {
			continue
		}
		row.Extracted++
		scored, correct, fromNoFact := false, false, false
		for _, id := range f.MessageIDs {
			if vs, ok := gold[id]; ok {
				scored = true
				for _, v := range vs {
					correct = correct || valueMatch(f.Value, v)
				}
			}
			if noFact[id] {
				scored, fromNoFact = true, true
			}
		}
		switch {
		case !scored:
			row.Unscored++
		case correct:
			row.Scored++
			row.Correct++
		default:
			row.Scored++
			if fromNoFact {
				row.FromNoFact++
			}
		}
	}
	found := func(g heldout.Fact) bool {
		for _, f := range st.all {
			if userFact(f) && valueMatch(f.Value, g.Value) && fromTurnID(f, g.Turn) {
				return true
			}
		}
		return false
	}
	byID := map[string]heldout.Fact{}
	for _, g := range c.Facts {
		byID[g.ID] = g
	}
	cur := st.current()
	current := func(v string) bool {
		for _, f := range cur {
			if userFact(f) && valueMatch(f.Value, v) {
				return true
			}
		}
		return false
	}
	var misses []string
	scripted := c.Name == "scripted"
	for _, g := range c.Facts {
		row.Facts++
		ok := found(g)
		if ok {
			row.Found++
		} else {
			t, _ := c.Turn(g.Turn)
			misses = append(misses, fmt.Sprintf("%s %q in %q", g.What, g.Value, t.Text))
		}
		if scripted {
			row.ScriptedFacts++
			if ok {
				row.ScriptedFound++
			}
			if g.ReplacedBy == "" {
				row.ScriptedCurrent++
				if current(g.Value) {
					row.ScriptedPresent++
				}
			} else if current(g.Value) {
				row.ScriptedStale++
			}
		}
		if g.ReplacedBy == "" {
			continue
		}
		row.Replaced++
		newest := byID[g.ReplacedBy]
		for newest.ReplacedBy != "" {
			newest = byID[newest.ReplacedBy]
		}
		if current(newest.Value) && !current(g.Value) {
			row.Resolved++
		}
	}
	return misses
}

func fromTurnID(f consolidate.Fact, id string) bool {
	for _, m := range f.MessageIDs {
		if m == id {
			return true
		}
	}
	return false
}

// Markdown writes the held-out extraction table.
func (r *HeldOutExtractionReport) Markdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	set := r.Set
	if set == "" {
		set = "membench/heldout"
	}
	p("## Consolidation on the held-out conversations (%s)\n\n", set)
	p("%d conversations written by hand apart from the extractor: %s turns in %d sittings, %d facts of the user (%d replaced by a later one), %d user turns that state no fact. "+
		"Each sitting is consolidated at its end with the user's current facts passed in, as the node does.\n\n",
		r.Conversations, thousands(r.Turns), r.Sittings, r.Facts, r.Replaced, r.NoFactTurns)
	p("*precision*: of the facts for the user's scope read from a scored turn (a fact turn or a no-fact turn), those whose value matches a gold value of that turn; " +
		"*from no-fact turns*: wrong facts read from a turn that states none; *unscored*: facts read only from turns the gold leaves unscored (borderline on purpose, not counted); " +
		"*recall*: gold facts (replaced ones included) read from their turn; *corrections current*: replaced facts whose newest value is current and old value current nowhere; " +
		"*scripted*: the fixed case's facts found, its current values current, its replaced values still current.\n\n")
	p("| extractor | extracted | precision | from no-fact turns | unscored | recall | corrections current | scripted: found | scripted: current values | scripted: stale values |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Rows {
		p("| %s | %d | %s | %d | %d | %s | %s | %d/%d | %d/%d | %d |\n", row.Name, row.Extracted, frac(row.Correct, row.Scored), row.FromNoFact, row.Unscored,
			frac(row.Found, row.Facts), frac(row.Resolved, row.Replaced), row.ScriptedFound, row.ScriptedFacts, row.ScriptedPresent, row.ScriptedCurrent, row.ScriptedStale)
	}
	if len(r.Misses) > 0 {
		p("\nSome gold facts the %s extractor missed:\n\n", r.Rows[0].Name)
		for _, m := range r.Misses {
			p("- %s\n", m)
		}
	}
	p("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// HeldOutDialogues are convs as the cross-session and question modes take
// them: the user speaker 0, the other speaker 1.
func HeldOutDialogues(convs []heldout.Conversation) ([]*Dialogue, error) {
	var out []*Dialogue
	for _, c := range convs {
		d := &Dialogue{Name: c.Name, Speakers: [2]string{c.User, c.Other}}
		for i, s := range c.Sittings {
			at, err := time.Parse(time.RFC3339, s.Date)
			if err != nil {
				return nil, fmt.Errorf("%w: held-out %s: sitting %d: %v", ErrConfig, c.Name, i+1, err)
			}
			ds := DialogueSitting{UnixNano: at.UnixNano()}
			for _, t := range s.Turns {
				sp := 0
				if t.Speaker != "user" {
					sp = 1
				}
				ds.Turns = append(ds.Turns, DialogueTurn{ID: t.ID, Speaker: sp, Text: t.Text})
			}
			d.Sittings = append(d.Sittings, ds)
		}
		for _, q := range c.Questions {
			d.Questions = append(d.Questions, DialogueQuestion{Text: q.Q, Answer: q.Answer, Category: q.Category, Evidence: q.Evidence})
		}
		if err := d.Validate(); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
