package membench

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/agentmem/agentmem/membench/heldout"
)

// Modes are the values of Tables.Mode; Sources those of Tables.Sources.
var (
	Modes   = []string{"all", "question", "cross", "extraction", "classic"}
	Sources = []string{"heldout", "heldout-fresh", "heldout-third", "heldout-long", "locomo", "generator"}
)

// heldOutSets are the held-out sources: the first set (membench/heldout
// data/), the second, written later apart from the extractor and any
// tuning on it (fresh/), the third, written later still the same way
// (third/), and the fourth, of long conversations (long/).
var heldOutSets = []struct {
	name, dir, source string
	load              func() ([]heldout.Conversation, error)
}{
	{"heldout", "membench/heldout", "held-out conversations (membench/heldout, written apart from the extractor)", heldout.Embedded},
	{"heldout-fresh", "membench/heldout/fresh", "second held-out set (membench/heldout/fresh, written apart from the extractor, never tuned against)", heldout.Fresh},
	{"heldout-third", "membench/heldout/third", "third held-out set (membench/heldout/third, written apart from the extractor, never tuned against)", heldout.Third},
	{"heldout-long", "membench/heldout/long", "fourth held-out set of long conversations (membench/heldout/long, 10-14 sittings and 350-500 turns each, written apart from the extractor, never tuned against)", heldout.Long},
}

// Tables is what cmd/membench prints: the runs Mode selects on the
// conversations Sources name, source by source in this order:
//
//   - heldout: the held-out conversations (membench/heldout, written by
//     hand apart from the extractor): extraction, cross-session and
//     question modes;
//   - heldout-fresh: the second held-out set (membench/heldout/fresh,
//     written later by a worker who never read the extractor): the same
//     modes;
//   - heldout-third: the third held-out set (membench/heldout/third,
//     written later still by another worker who never read the extractor):
//     the same modes;
//   - heldout-long: the fourth held-out set (membench/heldout/long, long
//     conversations of 10-14 sittings and 350-500 turns, so a small budget
//     holds only part of one): the same modes;
//   - locomo: the public LoCoMo conversations of the directory LoCoMo
//     names (skipped when it is ""): cross-session and question modes;
//   - generator: the generated conversations (internal/dialoggen,
//     internal/convgen): extraction, question mode, classic run.
//
// Mode "all" prints every table of the sources; another mode only its own.
type Tables struct {
	Mode    string
	Sources []string
	LoCoMo  string
	// Classic, Question and Cross configure the runs; the question mode's
	// budgets and search settings apply to every source.
	Classic  Config
	Question QuestionConfig
	Cross    CrossConfig
	// Progress receives a line per phase of the long runs (nil: none).
	Progress io.Writer
}

// Print runs the selected tables and writes each to w as it finishes.
func (t Tables) Print(ctx context.Context, w io.Writer) error {
	if !slices.Contains(Modes, t.Mode) {
		return fmt.Errorf("%w: mode %q: want one of %q", ErrConfig, t.Mode, Modes)
	}
	for _, s := range t.Sources {
		if !slices.Contains(Sources, s) {
			return fmt.Errorf("%w: source %q: want some of %q", ErrConfig, s, Sources)
		}
	}
	run := func(mode, source string) bool {
		return (t.Mode == "all" || t.Mode == mode) && slices.Contains(t.Sources, source)
	}
	cross := t.Cross
	cross.Progress = t.Progress

	for _, set := range heldOutSets {
		if !run("extraction", set.name) && !run("cross", set.name) && !run("question", set.name) {
			continue
		}
		convs, err := set.load()
		if err != nil {
			return err
		}
		if run("extraction", set.name) {
			rep, err := RunHeldOutExtraction(ctx, convs, []Extractor{Deterministic{}})
			if rep != nil {
				rep.Set = set.dir
			}
			if err := write(w, rep, err); err != nil {
				return err
			}
		}
		ds, err := HeldOutDialogues(convs)
		if err != nil {
			return err
		}
		if run("cross", set.name) {
			rep, err := RunCross(ctx, cross, ds, set.source, heldout.Categories)
			if err := write(w, rep, err); err != nil {
				return err
			}
		}
		if run("question", set.name) {
			rep, err := RunDialogueQuestions(ctx, t.Question, ds, set.source, heldout.Categories)
			if err := write(w, rep, err); err != nil {
				return err
			}
		}
	}

	if t.LoCoMo != "" && (run("cross", "locomo") || run("question", "locomo")) {
		ds, dropped, err := LoadLoCoMo(t.LoCoMo)
		if err != nil {
			return err
		}
		if dropped > 0 && t.Progress != nil {
			fmt.Fprintf(t.Progress, "membench: locomo: %d questions left out (their evidence names no turn)\n", dropped)
		}
		source := fmt.Sprintf("LoCoMo, public conversations (%s)", t.LoCoMo)
		if run("cross", "locomo") {
			rep, err := RunCross(ctx, cross, ds, source, LoCoMoCategories)
			if err := write(w, rep, err); err != nil {
				return err
			}
		}
		if run("question", "locomo") {
			rep, err := RunDialogueQuestions(ctx, t.Question, ds, source, LoCoMoCategories)
			if err := write(w, rep, err); err != nil {
				return err
			}
		}
	}

	if run("extraction", "generator") {
		llm, err := NewLLMStandIn()
		if err != nil {
			return err
		}
		rep, err := RunExtraction(ctx, t.Question, []Extractor{Deterministic{}, llm})
		llm.Close()
		if err := write(w, rep, err); err != nil {
			return err
		}
	}
	if run("question", "generator") {
		rep, err := RunQuestions(ctx, t.Question)
		if err := write(w, rep, err); err != nil {
			return err
		}
	}
	if run("classic", "generator") {
		rep, err := Run(ctx, t.Classic)
		if err := write(w, rep, err); err != nil {
			return err
		}
	}
	return nil
}

// write prints a report, or returns the error that stopped its run.
func write(w io.Writer, rep interface{ Markdown(io.Writer) error }, err error) error {
	if err != nil {
		return err
	}
	return rep.Markdown(w)
}
