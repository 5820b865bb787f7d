package membench

import (
	"context"
	"fmt"
	"io"
	"slices"
)

// Modes are the values of Tables.Mode.
var Modes = []string{"all", "question", "cross", "extraction", "classic"}

// Tables is what cmd/membench prints: the runs Mode selects, on the
// conversations they take, in this order: the public conversations (when
// LoCoMo names their directory), then the generator's.
//
//   - question: the question mode on LoCoMo (with LoCoMo set), else on the
//     generator's conversations;
//   - cross: the cross-session mode on LoCoMo (it needs it);
//   - extraction: the extraction table on the generator's conversations;
//   - classic: the convgen run;
//   - all: every table there are conversations for.
type Tables struct {
	Mode     string
	LoCoMo   string
	Classic  Config
	Question QuestionConfig
	Cross    CrossConfig
	// Progress receives a line per phase of the long runs (nil: none).
	Progress io.Writer
}

// Print runs the selected tables and writes them to w as they finish.
func (t Tables) Print(ctx context.Context, w io.Writer) error {
	if !slices.Contains(Modes, t.Mode) {
		return fmt.Errorf("%w: mode %q: want one of %q", ErrConfig, t.Mode, Modes)
	}
	all := t.Mode == "all"
	var public []*Dialogue
	if t.LoCoMo != "" {
		ds, dropped, err := LoadLoCoMo(t.LoCoMo)
		if err != nil {
			return err
		}
		if dropped > 0 && t.Progress != nil {
			fmt.Fprintf(t.Progress, "membench: locomo: %d questions left out (their evidence names no turn)\n", dropped)
		}
		public = ds
	} else if t.Mode == "cross" {
		return fmt.Errorf("%w: the cross-session mode needs conversations: -locomo DIR", ErrConfig)
	}
	source := fmt.Sprintf("LoCoMo, public conversations (%s)", t.LoCoMo)
	if public != nil && (all || t.Mode == "question") {
		rep, err := RunDialogueQuestions(ctx, t.Question, public, source, LoCoMoCategories)
		if err != nil {
			return err
		}
		if err := rep.Markdown(w); err != nil {
			return err
		}
	}
	if public != nil && (all || t.Mode == "cross") {
		cfg := t.Cross
		cfg.Progress = t.Progress
		rep, err := RunCross(ctx, cfg, public, source, LoCoMoCategories)
		if err != nil {
			return err
		}
		if err := rep.Markdown(w); err != nil {
			return err
		}
	}
	if all || t.Mode == "extraction" {
		llm, err := NewLLMStandIn()
		if err != nil {
			return err
		}
		rep, err := RunExtraction(ctx, t.Question, []Extractor{Deterministic{}, llm})
		llm.Close()
		if err != nil {
			return err
		}
		if err := rep.Markdown(w); err != nil {
			return err
		}
	}
	if all || (t.Mode == "question" && public == nil) {
		rep, err := RunQuestions(ctx, t.Question)
		if err != nil {
			return err
		}
		if err := rep.Markdown(w); err != nil {
			return err
		}
	}
	if all || t.Mode == "classic" {
		rep, err := Run(ctx, t.Classic)
		if err != nil {
			return err
		}
		if err := rep.Markdown(w); err != nil {
			return err
		}
	}
	return nil
}
