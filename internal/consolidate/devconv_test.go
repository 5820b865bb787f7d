package consolidate

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The development conversations of testdata/dev (see its README): each
// sitting is consolidated at its end with the facts in memory so far, as
// the node runs it, and scored as membench scores its held-out set.

type devFact struct {
	id, turn, what, value string
	replacedBy            string
}

type devConv struct {
	name     string
	sittings [][]Message
	facts    []devFact
	noFact   map[string]bool
	text     map[string]string // turn id -> text
}

func readDevConv(path string) (*devConv, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &devConv{name: filepath.Base(path), noFact: map[string]bool{}, text: map[string]string{}}
	var said time.Time
	lastOf := map[string]int{} // what -> index of its newest gold fact
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "@ "):
			t, err := time.Parse("2006-01-02 15:04", strings.TrimSpace(line[2:]))
			if err != nil {
				return nil, fmt.Errorf("%s: sitting time %q: %w", path, line, err)
			}
			said = t
			c.sittings = append(c.sittings, nil)
			continue
		}
		if len(c.sittings) == 0 {
			return nil, fmt.Errorf("%s: a turn before the first sitting: %q", path, line)
		}
		who, rest, ok := strings.Cut(line, ": ")
		if !ok || (who != "U" && who != "O") {
			return nil, fmt.Errorf("%s: speaker: %q", path, line)
		}
		n++
		id := fmt.Sprintf("t%d", n)
		text, gold, hasGold := strings.Cut(rest, " || ")
		text = strings.TrimSpace(text)
		s := len(c.sittings) - 1
		c.sittings[s] = append(c.sittings[s], Message{ID: id, Seq: uint64(n), User: who == "U", Text: text,
			Said: said.Add(time.Duration(len(c.sittings[s])) * time.Minute).UnixNano()})
		c.text[id] = text
		if !hasGold {
			continue
		}
		if who != "U" {
			return nil, fmt.Errorf("%s: gold on the other speaker's turn: %q", path, line)
		}
		if strings.TrimSpace(gold) == "-" {
			c.noFact[id] = true
			continue
		}
		for _, g := range strings.Split(gold, ";") {
			g = strings.TrimSpace(g)
			corr := strings.HasPrefix(g, "!")
			what, value, ok := strings.Cut(strings.TrimPrefix(g, "!"), "=")
			if !ok {
				return nil, fmt.Errorf("%s: gold %q", path, g)
			}
			df := devFact{id: fmt.Sprintf("f%d", len(c.facts)), turn: id, what: what, value: value}
			if corr {
				i, ok := lastOf[what]
				if !ok {
					return nil, fmt.Errorf("%s: %q corrects no earlier %q", path, g, what)
				}
				c.facts[i].replacedBy = df.id
			}
			lastOf[what] = len(c.facts)
			c.facts = append(c.facts, df)
		}
	}
	return c, sc.Err()
}

// devStore is memory as the node keeps it: one current value per key, a
// retraction deleting the key's value, a correction hiding the replaced
// value under another key.
type devStore struct {
	keys    []string
	hidden  map[string]bool
	history map[string][]Fact
	all     []Fact
}

func (m *devStore) write(f Fact) {
	if m.history == nil {
		m.history, m.hidden = map[string][]Fact{}, map[string]bool{}
	}
	m.all = append(m.all, f)
	if f.Type == Episodic {
		return
	}
	k := f.Key()
	h := m.history[k]
	if f.Retract {
		if len(h) > 0 && !m.hidden[k] && strings.EqualFold(h[len(h)-1].Value, f.Value) {
			m.hidden[k] = true
		}
		return
	}
	if len(h) > 0 && strings.EqualFold(h[len(h)-1].Value, f.Value) {
		return
	}
	if len(h) == 0 {
		m.keys = append(m.keys, k)
	}
	m.history[k] = append(h, f)
	delete(m.hidden, k)
	if f.Replaces == "" {
		return
	}
	for _, o := range m.current() {
		if o.Key() != k && strings.EqualFold(o.Value, f.Replaces) {
			m.hidden[o.Key()] = true
		}
	}
}

func (m *devStore) current() []Fact {
	var out []Fact
	for _, k := range m.keys {
		if !m.hidden[k] {
			h := m.history[k]
			out = append(out, h[len(h)-1])
		}
	}
	return out
}

func devValueMatch(v, p string) bool {
	v, p = strings.ToLower(strings.TrimSpace(v)), strings.ToLower(strings.TrimSpace(p))
	if len(v) < 3 || len(p) < 3 {
		return v == p && v != ""
	}
	return strings.Contains(v, p) || strings.Contains(p, v)
}

type devScore struct {
	extracted, scored, correct, unscored int
	facts, found, replaced, resolved     int
	wrong, missed, stale                 []string
}

func (s devScore) precision() float64 { return ratio(s.correct, s.scored) }
func (s devScore) recall() float64    { return ratio(s.found, s.facts) }
func (s devScore) current() float64   { return ratio(s.resolved, s.replaced) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func scoreDev(c *devConv, sc *devScore, untimed bool) {
	st := &devStore{}
	for _, msgs := range c.sittings {
		if untimed { // as membench's held-out table runs: no message times
			msgs = slices.Clone(msgs)
			for i := range msgs {
				msgs[i].Said = 0
			}
		}
		for _, f := range Extract(msgs, st.current()) {
			st.write(f)
		}
	}
	gold := map[string][]string{}
	for _, g := range c.facts {
		gold[g.turn] = append(gold[g.turn], g.value)
	}
	user := func(f Fact) bool { return f.Type != Episodic && !f.Retract }
	for _, f := range st.all {
		if !user(f) {
			continue
		}
		sc.extracted++
		scored, correct := false, false
		for _, id := range f.MessageIDs {
			for _, v := range gold[id] {
				scored = true
				correct = correct || devValueMatch(f.Value, v)
			}
			scored = scored || c.noFact[id]
		}
		switch {
		case !scored:
			sc.unscored++
		case correct:
			sc.scored++
			sc.correct++
		default:
			sc.scored++
			sc.wrong = append(sc.wrong, fmt.Sprintf("%s: %s = %q from %q", c.name, f.Key(), f.Value, f.Context))
		}
	}
	cur := st.current()
	isCurrent := func(v string) bool {
		for _, f := range cur {
			if user(f) && devValueMatch(f.Value, v) {
				return true
			}
		}
		return false
	}
	byID := map[string]devFact{}
	for _, g := range c.facts {
		byID[g.id] = g
	}
	for _, g := range c.facts {
		sc.facts++
		found := false
		for _, f := range st.all {
			if user(f) && devValueMatch(f.Value, g.value) && fromTurnOf(f, g.turn) {
				found = true
			}
		}
		if found {
			sc.found++
		} else {
			sc.missed = append(sc.missed, fmt.Sprintf("%s: %s=%s in %q", c.name, g.what, g.value, c.text[g.turn]))
		}
		if g.replacedBy == "" {
			continue
		}
		sc.replaced++
		newest := byID[g.replacedBy]
		for newest.replacedBy != "" {
			newest = byID[newest.replacedBy]
		}
		if isCurrent(newest.value) && !isCurrent(g.value) {
			sc.resolved++
		} else {
			sc.stale = append(sc.stale, fmt.Sprintf("%s: %s %q -> %q (new current %v, old current %v)", c.name, g.what, g.value, newest.value, isCurrent(newest.value), isCurrent(g.value)))
		}
	}
}

func fromTurnOf(f Fact, id string) bool {
	for _, m := range f.MessageIDs {
		if m == id {
			return true
		}
	}
	return false
}

func scoreDevDir(t *testing.T, dir string, untimed bool) devScore {
	files, err := filepath.Glob(filepath.Join("testdata", "dev", dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conversations in testdata/dev/%s: %v", dir, err)
	}
	sort.Strings(files)
	var sc devScore
	for _, file := range files {
		c, err := readDevConv(file)
		if err != nil {
			t.Fatal(err)
		}
		scoreDev(c, &sc, untimed)
	}
	return sc
}

// TestDevConversations scores the extractor on the development
// conversations; AGENTMEM_DEV_VERBOSE=batch1 (or "all") lists wrong facts, misses and
// stale corrections.
func TestDevConversations(t *testing.T) {
	// The floors are the figures measured less 0.02 (a rule change that
	// lowers one fails here). batch1, 3, 5, 6 and 7 are tuned on (3, 5,
	// 6 and 7 after one untouched measurement each); batch2, 4 and 8 were
	// written after rules and never tuned on. batch9 (long chatty turns,
	// written by a worker who read no extractor code) measured 0.69 /
	// 0.19 / 0.06 untouched, then was tuned on. batch10 (precision traps:
	// other people's facts, negations, maybes, quotes; written likewise)
	// measured 0.63 / 0.21 / 0.25 untouched; batch11 (four long chatty
	// conversations, 597 turns) 0.63 / 0.24 / 0.29 untouched.
	floors := map[string][3]float64{ // precision, recall, corrections current
		"batch1":  {0.98, 0.85, 0.84},
		"batch2":  {0.94, 0.74, 0.48},
		"batch3":  {0.93, 0.70, 0},
		"batch4":  {0.85, 0.50, 0.65},
		"batch5":  {0.98, 0.78, 0.98},
		"batch6":  {0.98, 0.90, 0.98},
		"batch7":  {0.98, 0.90, 0.98},
		"batch8":  {0.80, 0.52, 0},
		"batch9":  {0.81, 0.30, 0.27},
		"batch10": {0.63, 0.19, 0.23},
		"batch11": {0.74, 0.24, 0.27},
	}
	dirs := make([]string, 0, len(floors))
	for d := range floors {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		un := scoreDevDir(t, dir, true)
		t.Logf("%s without message times: precision %.2f (%d/%d), recall %.2f (%d/%d), corrections current %.2f (%d/%d)",
			dir, un.precision(), un.correct, un.scored, un.recall(), un.found, un.facts, un.current(), un.resolved, un.replaced)
		if un.precision() < floors[dir][0] {
			t.Errorf("%s without message times: precision %.2f, below %.2f", dir, un.precision(), floors[dir][0])
		}
		sc := scoreDevDir(t, dir, false)
		t.Logf("%s: extracted %d (scored %d, unscored %d): precision %.2f (%d/%d), recall %.2f (%d/%d), corrections current %.2f (%d/%d)",
			dir, sc.extracted, sc.scored, sc.unscored, sc.precision(), sc.correct, sc.scored, sc.recall(), sc.found, sc.facts, sc.current(), sc.resolved, sc.replaced)
		if v := os.Getenv("AGENTMEM_DEV_VERBOSE"); v == dir || v == "all" {
			for _, w := range sc.wrong {
				t.Log("wrong: " + w)
			}
			for _, m := range sc.missed {
				t.Log("missed: " + m)
			}
			for _, s := range sc.stale {
				t.Log("stale: " + s)
			}
		}
		fl := floors[dir]
		if sc.precision() < fl[0] || sc.recall() < fl[1] || sc.current() < fl[2] {
			t.Errorf("%s: below the floors %v", dir, fl)
		}
	}
}
