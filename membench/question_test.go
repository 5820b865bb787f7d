package membench

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/agentmem/agentmem/internal/dialoggen"
	"github.com/agentmem/agentmem/internal/segmented"
)

// smallQuestionConfig is one conversation of ~100 turns: the whole
// question mode in about a second.
func smallQuestionConfig() QuestionConfig {
	cfg := DefaultQuestionConfig()
	cfg.Conversations = 1
	cfg.Dialog.Sittings = 5
	cfg.Dialog.TurnsPerSitting = 20
	cfg.Budgets = []int{1024, 65536}
	return cfg
}

func TestRunQuestionsSmall(t *testing.T) {
	cfg := smallQuestionConfig()
	a, err := RunQuestions(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := RunQuestions(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ma, mb bytes.Buffer
	if err := a.Markdown(&ma); err != nil {
		t.Fatal(err)
	}
	if err := b.Markdown(&mb); err != nil {
		t.Fatal(err)
	}
	if ma.String() != mb.String() {
		t.Fatalf("same config, different tables:\n%s\n---\n%s", ma.String(), mb.String())
	}
	t.Log("\n" + ma.String())
	if len(a.Rows) != len(cfg.Budgets)*len(questionRows) || len(a.Cont) != 2*len(cfg.Budgets) || len(a.Search) != 2 || len(a.Where) != len(cfg.Budgets) {
		t.Fatalf("rows: %d, %d continuity, %d search, %d where", len(a.Rows), len(a.Cont), len(a.Search), len(a.Where))
	}
	evidence := 0
	for _, q := range mustGenerate(t, cfg.Dialog).Questions {
		evidence += len(q.Evidence)
	}
	for _, r := range a.Rows {
		if r.All.Evidence.N != a.Questions {
			t.Fatalf("%s at %d: %d of %d questions counted", r.Memory, r.Budget, r.All.Evidence.N, a.Questions)
		}
		if r.Memory != rowFull && r.MeanUsed > float64(r.Budget) {
			t.Fatalf("%s at %d: mean %f tokens", r.Memory, r.Budget, r.MeanUsed)
		}
		// The full transcript, and any memory whose budget holds it all,
		// has every evidence turn.
		if (r.Memory == rowFull || r.Budget > a.Tokens+4000 && r.Memory != rowRAG50 && r.Memory != rowRAG80) && r.All.Evidence.Hit != r.All.Evidence.N {
			t.Fatalf("%s at %d: evidence %v with %d tokens said", r.Memory, r.Budget, r.All.Evidence, a.Tokens)
		}
	}
	for _, w := range a.Where {
		if w.Total() != evidence {
			t.Fatalf("where at %d: %d of %d evidence turns", w.Budget, w.Total(), evidence)
		}
	}
	for _, r := range a.Cont {
		if r.All.Answer.N != a.Continuity || r.All.Answer.Pct() < 95 {
			t.Fatalf("continuity %s at %d: %v of %d", r.Memory, r.Budget, r.All.Answer, a.Continuity)
		}
	}
	for _, s := range a.Search {
		if s.All[0].N != a.Questions || s.All[0].Hit > s.All[1].Hit {
			t.Fatalf("%+v", s)
		}
	}
}

func mustGenerate(t *testing.T, cfg dialoggen.Config) *dialoggen.Conversation {
	t.Helper()
	c, err := dialoggen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBaselinesKeepTheBudget: the window and the RAG baselines never exceed
// the budget, whatever the hits, and the RAG keeps its recent share.
func TestBaselinesKeepTheBudget(t *testing.T) {
	conv := mustGenerate(t, smallQuestionConfig().Dialog)
	tok, err := segmented.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	q := &qrun{conv: conv, tok: tok, rom: textTokens(tok, conv.SystemPrompt)}
	for i := range conv.Messages {
		q.push(toConvgen(&conv.Messages[i]))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, b := range []int{300, 1024, 2048, 4096, 1 << 20} {
		for _, pct := range []int{100, 80, 50, 0} {
			hits := rng.Perm(len(q.tr))[:50]
			c := q.rag(b, pct, hits)
			if c.Used > b {
				t.Fatalf("budget %d, %d %%: %d tokens", b, pct, c.Used)
			}
			if w := q.rag(b, 100, nil); c.Used < b/2 && w.Used > c.Used+200 && pct > 0 && b < 1<<20 {
				t.Fatalf("budget %d, %d %%: only %d tokens used (window %d)", b, pct, c.Used, w.Used)
			}
		}
	}
	// The newest message is always in the window (when it fits).
	last := q.tr[len(q.tr)-1]
	if c := q.rag(1024, 80, nil); !bytes.Contains([]byte(c.Text), []byte(last.Content)) {
		t.Fatal("the newest message is not in the RAG's recent share")
	}
}

// TestRunQuestionsArchivedSummaries: with the sessions offered their
// archived summaries (each mirrored to a projection of its own), the
// question mode runs and is as deterministic as without.
func TestRunQuestionsArchivedSummaries(t *testing.T) {
	cfg := smallQuestionConfig()
	cfg.ArchivedSummaries = true
	var out [2]bytes.Buffer
	for i := range out {
		r, err := RunQuestions(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Markdown(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	if out[0].String() != out[1].String() {
		t.Fatalf("same config, different tables:\n%s\n---\n%s", out[0].String(), out[1].String())
	}
}
