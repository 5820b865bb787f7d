package convgen

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func generate(t *testing.T, cfg Config) *Conversation {
	t.Helper()
	c, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// digest renders everything a conversation holds.
func digest(c *Conversation) uint64 {
	h := fnv.New64a()
	for _, m := range c.Messages {
		fmt.Fprintf(h, "%d|%d|%v|%q|%q|%d|", m.Index, m.Sitting, m.Role, m.Content, m.ToolCallID, m.UnixNano)
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(h, "%s,%s,%s;", tc.Id, tc.Name, tc.Arguments)
		}
	}
	fmt.Fprintf(h, "%v%v%v", c.Appends, c.Sittings, c.Checkpoints)
	for _, f := range c.Facts {
		fmt.Fprintf(h, "%+v", *f)
	}
	for _, q := range c.Questions {
		fmt.Fprintf(h, "%+v", q)
	}
	return h.Sum64()
}

func TestDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	a, b := generate(t, cfg), generate(t, cfg)
	if digest(a) != digest(b) {
		t.Fatal("same seed, different conversations")
	}
	cfg.Seed = 2
	if digest(generate(t, cfg)) == digest(a) {
		t.Fatal("seeds 1 and 2 gave the same conversation")
	}
}

func TestShape(t *testing.T) {
	cfg := DefaultConfig()
	c := generate(t, cfg)
	t.Logf("seed %d: %d messages, %d appends, %d facts, %d questions, %d checkpoints",
		cfg.Seed, len(c.Messages), len(c.Appends), len(c.Facts), len(c.Questions), len(c.Checkpoints))
	if n := len(c.Messages); n < cfg.Sittings*cfg.MessagesPerSitting || n > cfg.Sittings*(cfg.MessagesPerSitting+20) {
		t.Fatalf("%d messages", n)
	}
	// Appends cut the messages in order, a user message alone; every tool
	// result answers a call made earlier in its append, every call is answered
	// in the append that makes it.
	next := 0
	for _, a := range c.Appends {
		if a.Start != next || a.End <= a.Start {
			t.Fatalf("append %v after %d", a, next)
		}
		next = a.End
		if c.Messages[a.Start].Role == memoryv1.Role_ROLE_USER && a.End-a.Start != 1 {
			t.Fatalf("user message not alone in append %v", a)
		}
		open := map[string]bool{}
		for _, m := range c.Messages[a.Start:a.End] {
			for _, tc := range m.ToolCalls {
				open[tc.Id] = true
			}
			if m.Role == memoryv1.Role_ROLE_TOOL {
				if !open[m.ToolCallID] {
					t.Fatalf("message %d answers %q, not open", m.Index, m.ToolCallID)
				}
				delete(open, m.ToolCallID)
			}
		}
		if len(open) > 0 {
			t.Fatalf("append %v leaves calls open: %v", a, open)
		}
	}
	if next != len(c.Messages) {
		t.Fatalf("appends end at %d of %d", next, len(c.Messages))
	}
	// Sittings: contiguous, days apart, the date in the first message.
	for i, s := range c.Sittings {
		if i > 0 && (s.Start != c.Sittings[i-1].End || s.UnixNano-c.Sittings[i-1].UnixNano < 20*3600e9) {
			t.Fatalf("sitting %d: %+v after %+v", i, s, c.Sittings[i-1])
		}
		if !strings.Contains(c.Messages[s.Start].Content, s.Label) {
			t.Fatalf("sitting %d opens without its date: %q", i, c.Messages[s.Start].Content)
		}
		for _, m := range c.Messages[s.Start:s.End] {
			if m.Sitting != i {
				t.Fatalf("message %d in sitting %d says %d", m.Index, i, m.Sitting)
			}
		}
	}
	for i := 1; i < len(c.Messages); i++ {
		if c.Messages[i].UnixNano <= c.Messages[i-1].UnixNano {
			t.Fatalf("time goes back at message %d", i)
		}
	}
	// Checkpoints: at append boundaries after an assistant reply, the last
	// one final at the end.
	ends := map[int]bool{}
	for _, a := range c.Appends {
		ends[a.End] = true
	}
	for i, cp := range c.Checkpoints {
		if !ends[cp.At] || c.Messages[cp.At-1].Role != memoryv1.Role_ROLE_ASSISTANT || (i > 0 && cp.At <= c.Checkpoints[i-1].At) {
			t.Fatalf("checkpoint %d at %d", i, cp.At)
		}
		if cp.Final != (i == len(c.Checkpoints)-1) {
			t.Fatalf("checkpoint %d final = %v", i, cp.Final)
		}
	}
	if last := c.Checkpoints[len(c.Checkpoints)-1]; last.At != len(c.Messages) {
		t.Fatalf("final checkpoint at %d of %d", last.At, len(c.Messages))
	}
	// Variety: every kind of fact, parallel tool calls, several topics.
	kinds := map[Kind]int{}
	topics := map[string]bool{}
	for _, f := range c.Facts {
		kinds[f.Kind]++
		topics[f.Topic] = true
	}
	for _, k := range []Kind{KindName, KindNumber, KindDate, KindID, KindDecision, KindCommitment, KindTool} {
		if kinds[k] == 0 {
			t.Errorf("no %s fact", k)
		}
	}
	parallel := 0
	for _, m := range c.Messages {
		if len(m.ToolCalls) > 1 {
			parallel++
		}
	}
	if parallel == 0 || len(topics) < 8 {
		t.Errorf("%d parallel calls, %d topics", parallel, len(topics))
	}
}

// TestAnswers checks every question against the messages themselves: the
// answer turn holds the answer, nothing later before the question does, and
// an answer string appears nowhere but in the turns that mention its fact.
func TestAnswers(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		cfg := DefaultConfig()
		cfg.Seed = seed
		c := generate(t, cfg)
		where := map[string][]int{} // value -> turns whose text holds it
		mentions := map[string]map[int]bool{}
		for _, f := range c.Facts {
			mentions[f.ID] = map[int]bool{}
			for _, m := range f.Mentions {
				mentions[f.ID][m.Turn] = true
				if _, ok := where[m.Value]; !ok {
					for _, msg := range c.Messages {
						if strings.Contains(msg.Text(), m.Value) {
							where[m.Value] = append(where[m.Value], msg.Index)
						}
					}
				}
			}
		}
		for _, f := range c.Facts {
			for _, m := range f.Mentions {
				for _, turn := range where[m.Value] {
					if !mentions[f.ID][turn] {
						t.Fatalf("seed %d: %s value %q appears in message %d, not a mention of the fact: %q", seed, f.ID, m.Value, turn, c.Messages[turn].Text())
					}
				}
				if !strings.Contains(c.Messages[m.Turn].Content, m.Value) {
					t.Fatalf("seed %d: %s mention at %d lacks %q: %q", seed, f.ID, m.Turn, m.Value, c.Messages[m.Turn].Content)
				}
			}
		}
		final := 0
		for _, q := range c.Questions {
			if q.Final {
				final++
			}
			if len(q.Answers) == 0 || q.AnswerTurn < 0 || q.AnswerTurn >= q.At {
				t.Fatalf("seed %d: %+v", seed, q)
			}
			ans := q.Answers[0]
			if !strings.Contains(c.Messages[q.AnswerTurn].Content, ans) {
				t.Fatalf("seed %d: %s: answer turn %d does not hold %q", seed, q.ID, q.AnswerTurn, ans)
			}
			if strings.Contains(q.Text, ans) {
				t.Fatalf("seed %d: %s gives its answer away: %q", seed, q.ID, q.Text)
			}
			for _, m := range c.Messages[q.AnswerTurn+1 : q.At] {
				if strings.Contains(m.Text(), ans) {
					t.Fatalf("seed %d: %s: message %d holds %q after the answer turn %d", seed, q.ID, m.Index, ans, q.AnswerTurn)
				}
			}
			for _, old := range q.Superseded {
				if old == ans || strings.Contains(ans, old) || strings.Contains(old, ans) {
					t.Fatalf("seed %d: %s: superseded %q vs answer %q", seed, q.ID, old, ans)
				}
			}
		}
		if final != len(c.Facts) {
			t.Fatalf("seed %d: %d final questions for %d facts", seed, final, len(c.Facts))
		}
	}
}

// TestCorrectionsSupersede: after a correction, questions expect the new
// value, never an old one, and the answer turn is the correction or later.
func TestCorrectionsSupersede(t *testing.T) {
	c := generate(t, DefaultConfig())
	corrected := 0
	for _, q := range c.Questions {
		f := c.Fact(q.Fact)
		var last *Mention
		var olds []string
		for i := range f.Mentions {
			m := &f.Mentions[i]
			if m.Turn >= q.At {
				break
			}
			if m.How == Corrected {
				if i == 0 || f.Mentions[i-1].Value == m.Value {
					t.Fatalf("%s: correction at %d keeps the value %q", f.ID, m.Turn, m.Value)
				}
				olds = append(olds, f.Mentions[i-1].Value)
				last = m
			} else if i > 0 && f.Mentions[i-1].Value != m.Value {
				t.Fatalf("%s: value changes at %d without a correction", f.ID, m.Turn)
			}
		}
		if last == nil {
			if len(q.Superseded) != 0 {
				t.Fatalf("%s: superseded %v without a correction", q.ID, q.Superseded)
			}
			continue
		}
		corrected++
		if q.Answers[0] != last.Value || q.AnswerTurn < last.Turn {
			t.Fatalf("%s: answer %q at %d, latest correction %q at %d", q.ID, q.Answers[0], q.AnswerTurn, last.Value, last.Turn)
		}
		for _, o := range olds {
			found := false
			for _, s := range q.Superseded {
				found = found || s == o
			}
			if !found {
				t.Fatalf("%s: old value %q not in superseded %v", q.ID, o, q.Superseded)
			}
		}
	}
	if corrected < 20 {
		t.Fatalf("only %d questions about corrected facts", corrected)
	}
}

func TestMessageID(t *testing.T) {
	for _, i := range []int{0, 7, 12345, 99999, 123456} {
		if got := ParseMessageID(MessageID(i)); got != i {
			t.Fatalf("%d -> %q -> %d", i, MessageID(i), got)
		}
	}
	for _, id := range []string{"", "t", "m5", "t5", "t0000x", "x00001"} {
		if got := ParseMessageID(id); got != -1 {
			t.Fatalf("%q -> %d", id, got)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, mut := range []func(*Config){
		func(c *Config) { c.Sittings = 0 },
		func(c *Config) { c.MessagesPerSitting = 5 },
		func(c *Config) { c.CheckpointsPerSitting = 0 },
		func(c *Config) { c.QuestionsPerCheckpoint = -1 },
	} {
		cfg := DefaultConfig()
		mut(&cfg)
		if _, err := Generate(cfg); !errors.Is(err, ErrConfig) {
			t.Fatalf("%+v: %v", cfg, err)
		}
	}
}
