package membench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// smallConfig is a conversation of ~130 messages (~4k tokens): the whole
// pipeline in half a second (some 10 s under -race, where SQLite, C
// translated to Go, is slow).
func smallConfig() Config {
	cfg := DefaultConfig()
	cfg.Conversation.Sittings = 2
	cfg.Conversation.MessagesPerSitting = 60
	cfg.Conversation.QuestionsPerCheckpoint = 4
	cfg.Budgets = []int{512, 65536}
	cfg.Profiles = []string{segmented.ProfileBalanced}
	cfg.SummarySpans = []int{4}
	return cfg
}

// quality is the report without the timings.
func quality(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	return s[:strings.Index(s, "### (d)")]
}

func TestRunSmall(t *testing.T) {
	cfg := smallConfig()
	a, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if qa, qb := quality(t, a), quality(t, b); qa != qb {
		t.Fatalf("same config, different figures:\n%s\n---\n%s", qa, qb)
	}
	t.Log("\n" + quality(t, a))
	// Per budget: each profile with recall off, the default one with recall
	// on too, and the window.
	if len(a.Context) != len(cfg.Budgets)*(len(cfg.Profiles)+2) || len(a.Search) != 2 || len(a.Latency) != len(cfg.Budgets)*(len(cfg.Profiles)+1) {
		t.Fatalf("rows: %d context, %d search, %d latency", len(a.Context), len(a.Search), len(a.Latency))
	}
	for _, c := range a.Context {
		if c.End.N != a.FinalQuestions || c.End.N+c.Checkpoints.N != a.Questions || c.Stale.N != a.CorrectedQuestions {
			t.Fatalf("%+v: questions not all counted (%d, %d final)", c, a.Questions, a.FinalQuestions)
		}
		n := 0
		for _, s := range c.ByDistance {
			n += s.N
		}
		if n != a.Questions || c.MeanUsed > float64(c.Budget) {
			t.Fatalf("%+v", c)
		}
		// A budget above the whole conversation keeps every message: every
		// answer is there, in both memories.
		if c.Budget > a.Tokens+1000 && (c.End.Hit != c.End.N || c.Checkpoints.Hit != c.Checkpoints.N || c.Rejected != 0) {
			t.Fatalf("budget %d > %d tokens said, yet %+v", c.Budget, a.Tokens, c)
		}
	}
	for _, s := range a.Search {
		if s.All[0].N != a.Questions || s.All[len(s.All)-1].Hit == 0 || s.All[0].Hit > s.All[1].Hit {
			t.Fatalf("%+v", s)
		}
	}
}

// The window counts tokens exactly as the session model stores them, so
// the two memories are compared at the same budget.
func TestTokenCountsMatchModel(t *testing.T) {
	conv, err := convgen.Generate(smallConfig().Conversation)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := segmented.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	m, err := newAgentmem(conv, tok, 1_000_000, segmented.ProfileBalanced, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range conv.Appends {
		if err := m.Append(conv.Messages[a.Start:a.End]); err != nil {
			t.Fatal(err)
		}
	}
	ctx := m.st.Context()
	seen := 0
	for _, cm := range ctx.GetMessages() {
		switch cm.GetLayer() {
		case segmented.LayerROM:
			if want := textTokens(tok, conv.SystemPrompt); int(cm.GetTokens()) != want {
				t.Fatalf("ROM: model %d, membench %d", cm.GetTokens(), want)
			}
		case segmented.LayerL1:
			i := convgen.ParseMessageID(cm.GetId())
			if want := messageTokens(tok, &conv.Messages[i], before(conv.Messages, i)); int(cm.GetTokens()) != want {
				t.Fatalf("message %d: model %d, membench %d", i, cm.GetTokens(), want)
			}
			seen++
		}
	}
	if seen != len(conv.Messages) {
		t.Fatalf("%d of %d messages verbatim", seen, len(conv.Messages))
	}
}

func TestWindowDropsOrphanToolResults(t *testing.T) {
	tok, err := segmented.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	conv := &convgen.Conversation{SystemPrompt: "sys"}
	msgs := []convgen.Message{
		{Index: 0, Role: memoryv1.Role_ROLE_USER, Content: "look it up"},
		{Index: 1, Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "lookup", Arguments: strings.Repeat("x ", 200)}}},
		{Index: 2, Role: memoryv1.Role_ROLE_TOOL, ToolCallID: "c1", Content: "RESULT-1"},
		{Index: 3, Role: memoryv1.Role_ROLE_ASSISTANT, Content: "done"},
	}
	w := newWindow(conv, tok, 60)
	if err := w.Append(msgs); err != nil {
		t.Fatal(err)
	}
	c, err := w.Context(nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Text, "RESULT-1") || !strings.Contains(c.Text, "done") || c.Used > 60 || c.VerbatimMessages != 1 {
		t.Fatalf("%+v", c)
	}
}

// Any question is a valid FTS5 query (quotes, operators, punctuation).
func TestFTS5QueryHostile(t *testing.T) {
	s, err := newFTS5Searcher()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.Add([]convgen.Message{{Index: 0, Content: "O'Brien owns customer-id 42 AND the NEAR budget"}}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]bool{
		`O'Brien`: true, `"unbalanced`: false, `customer-id`: true, `AND OR NOT`: true,
		`NEAR(budget)`: true, `*`: false, `error: 3706`: false, ``: false, `???`: false,
	} {
		hits, err := s.Search(q, 10)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if want != (len(hits) == 1) {
			t.Fatalf("%q: %v", q, hits)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, mut := range []func(*Config){
		func(c *Config) { c.Budgets = nil },
		func(c *Config) { c.Budgets = []int{100} },
		func(c *Config) { c.Budgets = []int{4096, 2048} },
		func(c *Config) { c.Profiles = []string{"fast"} },
		func(c *Config) { c.RecallK = []int{5, 50} },
		func(c *Config) { c.SummarySpans = []int{0} },
	} {
		cfg := DefaultConfig()
		mut(&cfg)
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Fatalf("%+v: %v", cfg, err)
		}
	}
}
