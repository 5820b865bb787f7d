package dialoggen

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func generate(t *testing.T, pools string, seed uint64) *Conversation {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Seed, cfg.Pools = seed, pools
	c, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDeterministic(t *testing.T) {
	for _, pools := range PoolSets {
		a, b := generate(t, pools, 3), generate(t, pools, 3)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("pools %q: same config, different conversations", pools)
		}
		if c := generate(t, pools, 4); reflect.DeepEqual(a.Messages, c.Messages) {
			t.Fatalf("pools %q: different seeds, same messages", pools)
		}
	}
	if a, h := generate(t, "", 3), generate(t, "holdout", 3); reflect.DeepEqual(a.Messages, h.Messages) {
		t.Fatal("different pools, same messages")
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{Sittings: 1, TurnsPerSitting: 20}, {Sittings: 5, TurnsPerSitting: 2}, {Sittings: 99, TurnsPerSitting: 20}, {Sittings: 5, TurnsPerSitting: 20, Pools: "nope"}} {
		if _, err := Generate(c); err == nil {
			t.Fatalf("%+v: no error", c)
		}
	}
}

// TestShape: sizes, alternation, times, appends and tool pairs.
func TestShape(t *testing.T) {
	for _, pools := range PoolSets {
		for seed := uint64(1); seed <= 3; seed++ {
			c := generate(t, pools, seed)
			if n := len(c.Messages); n < 500 || n > 800 {
				t.Fatalf("seed %d: %d messages", seed, n)
			}
			if len(c.Questions) < 100 || len(c.Continuity) < 15 {
				t.Fatalf("seed %d: %d questions, %d continuity", seed, len(c.Questions), len(c.Continuity))
			}
			for _, cat := range EndCategories {
				if !slices.ContainsFunc(c.Questions, func(q Question) bool { return q.Category == cat }) {
					t.Fatalf("seed %d: no %s question", seed, cat)
				}
			}
			at := 0
			for _, a := range c.Appends {
				if a.Start != at || a.End <= a.Start {
					t.Fatalf("append %v after %d", a, at)
				}
				at = a.End
				calls := map[string]bool{}
				for i := a.Start; i < a.End; i++ {
					m := c.Messages[i]
					for _, tc := range m.ToolCalls {
						calls[tc.Id] = true
					}
					if m.Role == memoryv1.Role_ROLE_TOOL && !calls[m.ToolCallID] {
						t.Fatalf("message %d: tool result without its call in the append", i)
					}
				}
			}
			if at != len(c.Messages) {
				t.Fatalf("appends end at %d of %d", at, len(c.Messages))
			}
			for i, m := range c.Messages {
				if m.Index != i || m.Role != roleOf(m.Speaker) && m.Role != memoryv1.Role_ROLE_TOOL {
					t.Fatalf("message %d: %+v", i, m)
				}
				if i > 0 && m.UnixNano <= c.Messages[i-1].UnixNano {
					t.Fatalf("message %d said before message %d", i, i-1)
				}
			}
		}
	}
}

// TestEvidenceHoldsAnswer: every group of Needs is in an evidence turn's
// content, or is the date of an evidence turn's sitting; the question never
// holds a value; a planted value is said nowhere but in its evidence (and,
// for corrections and multi-hop, the other turns of its fact).
func TestEvidenceHoldsAnswer(t *testing.T) {
	for _, pools := range PoolSets {
		for seed := uint64(1); seed <= 3; seed++ {
			c := generate(t, pools, seed)
			check := func(q Question) {
				for _, g := range q.Needs {
					ok := false
					for _, e := range q.Evidence {
						if e >= q.At {
							t.Fatalf("%s: evidence %d not before %d", q.ID, e, q.At)
						}
						m := c.Messages[e]
						if containsAny(m.Content, g) || slices.Equal(g, c.Sittings[m.Sitting].DateForms) {
							ok = true
						}
					}
					if !ok {
						t.Fatalf("%s %q: no evidence turn holds %v (evidence %v)", q.ID, q.Text, g, q.Evidence)
					}
				}
				if (q.Category == SingleHop || q.Category == Correction) && strings.Contains(q.Text, q.Needs[0][0]) {
					t.Fatalf("%s %q holds its answer", q.ID, q.Text)
				}
				if q.Category == SingleHop || q.Category == Correction {
					v := q.Needs[0][0]
					for i, m := range c.Messages {
						if strings.Contains(m.Content, v) && !slices.Contains(q.Evidence, i) {
							t.Fatalf("%s: value %q also in message %d: %q", q.ID, v, i, m.Content)
						}
					}
				}
				if q.Category == Correction && !containsAny(c.Messages[q.Evidence[0]].Content, q.Needs[0]) {
					t.Fatalf("%s: the correction turn lacks the current value", q.ID)
				}
			}
			for _, q := range c.Questions {
				check(q)
			}
			for _, q := range c.Continuity {
				check(q)
				if q.At-q.Evidence[0] > 8 {
					t.Fatalf("%s: evidence %d is %d messages before the question", q.ID, q.Evidence[0], q.At-q.Evidence[0])
				}
			}
		}
	}
}

// TestParaphrased: a paraphrased question shares at most one content word
// with its evidence turns (besides the values and the speakers' names), and
// on average far fewer.
func TestParaphrased(t *testing.T) {
	for _, pools := range PoolSets {
		t.Run("pools="+pools, func(t *testing.T) { testParaphrased(t, pools) })
	}
}

func testParaphrased(t *testing.T, pools string) {
	shared, n, literal := 0, 0, 0
	for seed := uint64(1); seed <= 3; seed++ {
		c := generate(t, pools, seed)
		for _, q := range c.Questions {
			if !q.Paraphrased {
				literal++
				continue
			}
			skip := map[string]bool{strings.ToLower(c.Speakers[0]): true, strings.ToLower(c.Speakers[1]): true}
			for _, g := range q.Needs {
				for _, s := range g {
					for _, w := range contentWords(s) {
						skip[w] = true
					}
				}
			}
			ev := map[string]bool{}
			for _, e := range q.Evidence {
				for _, w := range contentWords(c.Messages[e].Content) {
					ev[w] = true
				}
			}
			var common []string
			for _, w := range contentWords(q.Text) {
				if ev[w] && !skip[w] && !slices.Contains(common, w) {
					common = append(common, w)
				}
			}
			if len(common) > 1 {
				t.Errorf("%s %q shares %v with its evidence", q.ID, q.Text, common)
			}
			shared += len(common)
			n++
		}
	}
	if mean := float64(shared) / float64(n); mean > 0.3 || literal >= n {
		t.Fatalf("%d paraphrased questions share %.2f content words on average; %d literal", n, mean, literal)
	} else {
		t.Logf("%d paraphrased questions share %.2f content words on average; %d literal", n, mean, literal)
	}
}

var stop = map[string]bool{"the": true, "and": true, "did": true, "does": true, "what": true, "who": true, "when": true, "where": true, "which": true,
	"how": true, "was": true, "that": true, "for": true, "with": true, "from": true, "all": true, "has": true, "her": true, "his": true, "now": true, "new": true}

func contentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		w = strings.TrimSuffix(strings.Trim(w, "'"), "'s")
		if len(w) >= 3 && !stop[w] {
			out = append(out, w)
		}
	}
	return out
}

func containsAny(s string, xs []string) bool {
	return slices.ContainsFunc(xs, func(x string) bool { return strings.Contains(s, x) })
}

// strings of a pool set by pool: the values, and both sides of the pairs.
func (ps *poolSet) byPool() map[string][]string {
	pairs := func(xs []pair) []string {
		var out []string
		for _, p := range xs {
			out = append(out, p.ev, p.q)
		}
		return out
	}
	m := map[string][]string{
		"speakerNames": ps.speakerNames, "firstNames": ps.firstNames, "petNames": ps.petNames, "cities": ps.cities,
		"companies": ps.companies, "roles": ps.roles, "fields": ps.fields, "bodyParts": ps.bodyParts,
		"hobbies": pairs(ps.hobbies), "teacherWords": ps.teacherWords, "teacherDescr": ps.teacherDescr, "pets": pairs(ps.pets),
		"petAntics": ps.petAntics, "shelters": ps.shelters, "relatives": pairs(ps.relatives), "occasions": pairs(ps.occasions),
		"tripFood": ps.tripFood, "activities": pairs(ps.activities), "purchases": pairs(ps.purchases), "placeFirst": ps.placeFirst,
	}
	for _, d := range ps.taskDomains {
		m["taskDomains"] = append(m["taskDomains"], append(append(slices.Clone(d.suffixes), d.reasons...), pairs(d.steps)...)...)
	}
	return m
}

// TestPools: in both sets a pair's ev and q share no content word (but for
// two literal kin words of the default set, kept for its output); the
// held-out set is as large as the default one and shares no item and no
// question wording with it.
func TestPools(t *testing.T) {
	known := []pair{{"twin sister", "twin"}, {"cousin", "first cousin"}}
	for _, name := range PoolSets {
		ps := poolsOf(name)
		for _, xs := range [][]pair{ps.hobbies, ps.pets, ps.relatives, ps.occasions, ps.activities, ps.purchases} {
			for _, p := range xs {
				q := contentWords(p.q)
				for _, w := range contentWords(p.ev) {
					if slices.Contains(q, w) && !(name == "" && slices.Contains(known, p)) {
						t.Errorf("pools %q: %q and %q share %q", name, p.ev, p.q, w)
					}
				}
			}
		}
	}
	def, hold := defaultPools.byPool(), holdoutPools.byPool()
	all := map[string]string{}
	for pool, xs := range def {
		for _, x := range xs {
			all[strings.ToLower(x)] = pool
		}
	}
	for pool, xs := range hold {
		if len(xs) < len(def[pool]) {
			t.Errorf("holdout %s: %d items, default %d", pool, len(xs), len(def[pool]))
		}
		for _, x := range xs {
			if p, ok := all[strings.ToLower(x)]; ok {
				t.Errorf("holdout %s: %q is also in the default %s", pool, x, p)
			}
		}
	}
}

// TestPlanted: every planted value is said in the turn recorded for it,
// by its owner, and a corrected fact has its correction turn.
func TestPlanted(t *testing.T) {
	c, err := Generate(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Planted) == 0 {
		t.Fatal("no planted facts")
	}
	corrected := 0
	for _, p := range c.Planted {
		if len(p.Values) != len(p.Turns) || len(p.Values) == 0 || len(p.Evidence) == 0 {
			t.Fatalf("planted %+v", p)
		}
		for i, v := range p.Values {
			m := c.Messages[p.Turns[i]]
			if !strings.Contains(m.Content, v) || m.Speaker != p.Owner {
				t.Errorf("%s value %q not said by speaker %d in turn %d: %q", p.Kind, v, p.Owner, p.Turns[i], m.Content)
			}
		}
		if len(p.Values) > 1 {
			corrected++
		}
	}
	if corrected == 0 {
		t.Error("no planted fact is corrected")
	}
}
