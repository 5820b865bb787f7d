package membench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/segmented"
)

// Config is one benchmark run.
type Config struct {
	Conversation convgen.Config
	// Budgets are context budgets in tokens (max_context − reserved_output).
	Budgets []int
	// Profiles are the compression profiles agentmem runs with, the first
	// one the default (the summarizer rows of the run use it).
	Profiles []string
	// SummarySpans are the span lengths (messages) of the summarizer table.
	SummarySpans []int
	// RecallK are the k of recall@k, ascending; the largest is the search
	// limit (at most projections.MaxSearchLimit).
	RecallK []int
	// Dir holds the projection's bbolt file; "" = a temporary directory,
	// removed afterwards.
	Dir string
}

// DefaultConfig is the run of `make bench-memory`.
func DefaultConfig() Config {
	return Config{
		Conversation: convgen.DefaultConfig(),
		Budgets:      []int{2048, 4096, 16384},
		Profiles:     []string{segmented.ProfileFill, segmented.ProfileBalanced, segmented.ProfileDataIntensive, segmented.ProfileConversational},
		SummarySpans: []int{4, 8, 32},
		RecallK:      []int{5, 10},
	}
}

// ErrConfig is returned (wrapped) for an invalid Config.
var ErrConfig = errors.New("membench: invalid config")

// Validate checks the Config.
func (c Config) Validate() error {
	if err := c.Conversation.Validate(); err != nil {
		return err
	}
	if len(c.Budgets) == 0 || len(c.Profiles) == 0 || len(c.RecallK) == 0 {
		return fmt.Errorf("%w: Budgets, Profiles and RecallK must not be empty", ErrConfig)
	}
	for _, b := range c.Budgets {
		if b < segmented.MinBudget {
			return fmt.Errorf("%w: budget %d < %d", ErrConfig, b, segmented.MinBudget)
		}
	}
	if !slices.IsSorted(c.Budgets) || !slices.IsSorted(c.RecallK) {
		return fmt.Errorf("%w: Budgets and RecallK must be ascending", ErrConfig)
	}
	if c.RecallK[0] < 1 || c.RecallK[len(c.RecallK)-1] > 20 {
		return fmt.Errorf("%w: RecallK must be in 1..20", ErrConfig)
	}
	for _, p := range c.Profiles {
		if _, ok := segmented.Profile(p); !ok {
			return fmt.Errorf("%w: unknown profile %q", ErrConfig, p)
		}
	}
	for _, n := range c.SummarySpans {
		if n < 1 {
			return fmt.Errorf("%w: summary span %d", ErrConfig, n)
		}
	}
	return nil
}

// Run generates the conversation, replays it into every memory and
// searcher, and measures. Every figure except Report.Latency depends only on
// the Config.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	conv, err := convgen.Generate(cfg.Conversation)
	if err != nil {
		return nil, err
	}
	tok, err := segmented.NewTokenizer()
	if err != nil {
		return nil, err
	}
	dir, cleanup, err := workDir(cfg.Dir, "membench-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	r := newRun(cfg, conv, tok)
	if err := r.replay(ctx, dir); err != nil {
		return nil, err
	}
	return r.report(), nil
}

// workDir returns dir, or a new temporary directory (named by pattern)
// that cleanup removes.
func workDir(dir, pattern string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { _ = os.RemoveAll(tmp) }, nil
}

// run holds the state of one Run.
type run struct {
	cfg    Config
	conv   *convgen.Conversation
	tok    segmented.Tokenizer
	tokens []int // per message

	memories []memoryRun
	search   []*searchRun
}

type memoryRun struct {
	budget int
	mem    Memory
	row    ContextRow
	// sums of the context make-up over checkpoints
	used, verbatim, summaries, other, msgs, checkpoints int
}

type searchRun struct {
	s   Searcher
	row SearchRow
}

func newRun(cfg Config, conv *convgen.Conversation, tok segmented.Tokenizer) *run {
	r := &run{cfg: cfg, conv: conv, tok: tok, tokens: make([]int, len(conv.Messages))}
	for i := range conv.Messages {
		r.tokens[i] = messageTokens(tok, &conv.Messages[i], before(conv.Messages, i))
	}
	return r
}

func (r *run) replay(ctx context.Context, dir string) error {
	ps, err := newProjectionSearcher(dir, r.conv, r.tok)
	if err != nil {
		return err
	}
	fs, err := newFTS5Searcher()
	if err != nil {
		_ = ps.Close()
		return err
	}
	for _, b := range r.cfg.Budgets {
		for i, p := range r.cfg.Profiles {
			if i == 0 {
				// The default session: the context assembler on, its
				// recall searching what the projection searcher holds
				// (the messages said before the append).
				m, err := newAgentmem(r.conv, r.tok, b, p, ps)
				if err != nil {
					return err
				}
				r.memories = append(r.memories, memoryRun{budget: b, mem: m})
			}
			m, err := newAgentmem(r.conv, r.tok, b, p, nil)
			if err != nil {
				return err
			}
			r.memories = append(r.memories, memoryRun{budget: b, mem: m})
		}
		r.memories = append(r.memories, memoryRun{budget: b, mem: newWindow(r.conv, r.tok, b)})
	}
	r.search = []*searchRun{{s: ps}, {s: fs}}
	defer func() {
		for _, s := range r.search {
			_ = s.s.Close()
		}
	}()
	for i := range r.memories {
		r.memories[i].row = ContextRow{Budget: r.memories[i].budget, Memory: r.memories[i].mem.Name(), ByDistance: make([]Share, len(r.cfg.Budgets)+1)}
	}
	for _, s := range r.search {
		s.row = SearchRow{Engine: s.s.Name(), K: r.cfg.RecallK, All: make([]Share, len(r.cfg.RecallK)), End: make([]Share, len(r.cfg.RecallK))}
	}
	qs := r.conv.Questions
	cp := 0
	for _, a := range r.conv.Appends {
		if err := ctx.Err(); err != nil {
			return err
		}
		msgs := r.conv.Messages[a.Start:a.End]
		for i := range r.memories {
			if err := r.memories[i].mem.Append(msgs); err != nil {
				return err
			}
		}
		for _, s := range r.search {
			if err := s.s.Add(msgs); err != nil {
				return err
			}
		}
		for cp < len(r.conv.Checkpoints) && r.conv.Checkpoints[cp].At == a.End {
			var asked []convgen.Question
			for len(qs) > 0 && qs[0].Checkpoint == cp {
				asked, qs = append(asked, qs[0]), qs[1:]
			}
			if err := r.checkpoint(asked); err != nil {
				return err
			}
			cp++
		}
	}
	if len(qs) > 0 || cp != len(r.conv.Checkpoints) {
		return fmt.Errorf("membench: %d questions and %d checkpoints left after the replay", len(qs), len(r.conv.Checkpoints)-cp)
	}
	return nil
}

// distanceBucket returns the bucket of a question: how many tokens were
// said after the answer turn, cut at the budgets.
func (r *run) distanceBucket(q *convgen.Question) int {
	d := 0
	for i := q.AnswerTurn + 1; i < q.At; i++ {
		d += r.tokens[i]
	}
	for i, b := range r.cfg.Budgets {
		if d < b {
			return i
		}
	}
	return len(r.cfg.Budgets)
}

func (r *run) checkpoint(qs []convgen.Question) error {
	for i := range r.memories {
		mr := &r.memories[i]
		c, err := mr.mem.Context(nil)
		if err != nil {
			return err
		}
		mr.checkpoints++
		mr.used += c.Used
		mr.verbatim += c.Verbatim
		mr.summaries += c.Summaries
		mr.other += c.Other
		mr.msgs += c.VerbatimMessages
		if c.Used > mr.budget {
			return fmt.Errorf("membench: %s uses %d tokens of a budget of %d", mr.mem.Name(), c.Used, mr.budget)
		}
		for k := range qs {
			q := &qs[k]
			if c, err = mr.mem.Context(q); err != nil {
				return err
			}
			hit := containsAny(c.Text, q.Answers)
			if q.Final {
				mr.row.End.add(hit)
			} else {
				mr.row.Checkpoints.add(hit)
			}
			mr.row.ByDistance[r.distanceBucket(q)].add(hit)
			if !c.AnswerVerbatim {
				mr.row.Forgotten.add(hit)
			}
			if len(q.Superseded) > 0 {
				mr.row.Stale.add(!hit && containsAny(c.Text, q.Superseded))
			}
		}
	}
	limit := r.cfg.RecallK[len(r.cfg.RecallK)-1]
	for _, s := range r.search {
		for k := range qs {
			q := &qs[k]
			hits, err := s.s.Search(q.Text, limit)
			if err != nil {
				return err
			}
			rank := slices.Index(hits, q.AnswerTurn)
			for j, kk := range r.cfg.RecallK {
				hit := rank >= 0 && rank < kk
				s.row.All[j].add(hit)
				if q.Final {
					s.row.End[j].add(hit)
				}
			}
			if rank >= 0 {
				s.row.rr += 1 / float64(rank+1)
			}
		}
	}
	return nil
}

func containsAny(text string, xs []string) bool {
	for _, x := range xs {
		if strings.Contains(text, x) {
			return true
		}
	}
	return false
}

func (r *run) report() *Report {
	c := r.conv
	rep := &Report{
		Seed: c.Config.Seed, Messages: len(c.Messages), Appends: len(c.Appends), Sittings: len(c.Sittings),
		Facts: len(c.Facts), Checkpoints: len(c.Checkpoints), Questions: len(c.Questions),
		Budgets: r.cfg.Budgets,
	}
	for _, n := range r.tokens {
		rep.Tokens += n
	}
	for _, f := range c.Facts {
		for _, m := range f.Mentions {
			if m.How == convgen.Corrected {
				rep.CorrectedFacts++
				break
			}
		}
	}
	for _, q := range c.Questions {
		if q.Final {
			rep.FinalQuestions++
		}
		if len(q.Superseded) > 0 {
			rep.CorrectedQuestions++
		}
	}
	for _, m := range c.Messages {
		if len(m.ToolCalls) > 0 {
			rep.ToolCalls += len(m.ToolCalls)
		}
	}
	ix := newFactIndex(c)
	for i := range r.memories {
		mr := &r.memories[i]
		row := mr.row
		if n := float64(mr.checkpoints); n > 0 {
			row.MeanUsed = float64(mr.used) / n
			row.MeanVerbatim = float64(mr.verbatim) / n
			row.MeanSummaries = float64(mr.summaries) / n
			row.MeanOther = float64(mr.other) / n
			row.MeanMessages = float64(mr.msgs) / n
		}
		if am, ok := mr.mem.(*agentmemMemory); ok {
			row.Rejected = am.rejected
			rep.Latency = append(rep.Latency, LatencyRow{
				Budget: mr.budget, Memory: am.Name(), Appends: len(am.appendLat),
				Append: summarize(am.appendLat), Context: summarize(am.contextLat),
			})
			if am.profile == r.cfg.Profiles[0] {
				rep.RunSummaries = append(rep.RunSummaries, runSummaries(am, ix))
			}
		}
		rep.Context = append(rep.Context, row)
	}
	for _, s := range r.search {
		row := s.row
		if n := row.All[0].N; n > 0 {
			row.MRR = row.rr / float64(n)
		}
		rep.Search = append(rep.Search, row)
	}
	rep.Summarizer = measureSummarizer(c, r.tok, r.cfg.SummarySpans)
	return rep
}

// summarize returns the mean, median and 99th percentile of ds.
func summarize(ds []time.Duration) Timing {
	if len(ds) == 0 {
		return Timing{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Timing{Mean: sum / time.Duration(len(s)), P50: s[len(s)/2], P99: s[min(len(s)-1, len(s)*99/100)]}
}
