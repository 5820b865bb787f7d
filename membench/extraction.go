package membench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/consolidate"
	"github.com/agentmem/agentmem/internal/dialoggen"
	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The extraction table: the generator's conversations
// (internal/dialoggen), one session per sitting, consolidated at the end
// of each sitting into the user's long-term memory the way the node does
// (the user's facts known so far passed in, last write wins per key, a
// value already current merged). Measured against the planted facts of the
// user (speaker 0; Conversation.Planted):
//
//   - precision: extracted facts whose value is a value the fact's source
//     turn planted (the value, its correction, or another value that turn
//     states: the class, the animal, the relative, the employer and role,
//     the item). Anything else the extractor reads counts against it;
//   - recall: planted values (first values and corrections) read from the
//     turn that says them;
//   - corrections resolved: corrected facts whose newest value is current
//     in memory and whose old value is current nowhere;
//   - new session: each end question about the user's own facts
//     (single-hop and correction questions whose evidence the user said)
//     asked in a NEW session of the same user, where only long-term memory
//     can answer. The memory section is the user scope's entries the
//     assembler's search would offer (the best memoryMatches by BM25 for
//     the question, then the memoryTop newest): answer = it holds the
//     question's Needs; stale = a correction question whose section holds
//     an old value and not the current one. "off" is consolidation off:
//     the new session has no memory of the user.

// Extractor is one extractor under test (consolidate.Extract, or an LLM
// with it as fallback).
type Extractor interface {
	Name() string
	Extract(ctx context.Context, msgs []consolidate.Message, known []consolidate.Fact) ([]consolidate.Fact, error)
}

// ExtractionRow is one extractor's figures over every conversation.
type ExtractionRow struct {
	Name                   string
	Extracted, Correct     int
	Planted, Recalled      int
	Corrected, Resolved    int
	Questions, Answered    int
	CorrQuestions, Stale   int
	Fallbacks, ExtractRuns int
}

// ExtractionReport is the extraction table.
type ExtractionReport struct {
	Conversations int
	Sittings      int
	Rows          []ExtractionRow
	// Misses are a few planted values no extractor read (for tuning).
	Misses []string
}

// memory section shape (api/assemble.go).
const (
	benchMemoryMatches = 5
	benchMemoryTop     = 3
)

// RunExtraction runs the extraction table on cfg.Conversations generated
// conversations (seeds cfg.Dialog.Seed, +1, …) for each extractor, with
// consolidation off as the first row.
func RunExtraction(ctx context.Context, cfg QuestionConfig, extractors []Extractor) (*ExtractionReport, error) {
	rep := &ExtractionReport{Conversations: cfg.Conversations, Rows: []ExtractionRow{{Name: "consolidation off"}}}
	for _, x := range extractors {
		rep.Rows = append(rep.Rows, ExtractionRow{Name: x.Name()})
	}
	for i := 0; i < cfg.Conversations; i++ {
		dc := cfg.Dialog
		dc.Seed += uint64(i)
		conv, err := dialoggen.Generate(dc)
		if err != nil {
			return nil, err
		}
		rep.Sittings += len(conv.Sittings)
		off := &memoryStore{}
		off.score(conv, &rep.Rows[0])
		for xi, x := range extractors {
			if l, ok := x.(interface{ Learn(*dialoggen.Conversation) }); ok {
				l.Learn(conv)
			}
			st := &memoryStore{}
			row := &rep.Rows[xi+1]
			for _, s := range conv.Sittings {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				msgs := sittingMessages(conv, s.Span)
				fs, err := x.Extract(ctx, msgs, st.known())
				if err != nil {
					return nil, fmt.Errorf("%s: %w", x.Name(), err)
				}
				row.ExtractRuns++
				for _, f := range fs {
					st.write(f)
				}
			}
			st.score(conv, row)
			if fb, ok := x.(interface{ Fallbacks() int }); ok {
				row.Fallbacks = fb.Fallbacks()
			}
			if xi == 0 && len(rep.Misses) < 12 {
				rep.Misses = append(rep.Misses, st.misses(conv, 12-len(rep.Misses))...)
			}
		}
	}
	return rep, nil
}

// sittingMessages are the user and assistant messages of span, as a
// session's consolidation reads them (ids "m<index>").
func sittingMessages(conv *dialoggen.Conversation, span dialoggen.Span) []consolidate.Message {
	var out []consolidate.Message
	for i := span.Start; i < span.End; i++ {
		m := conv.Messages[i]
		if m.Role != memoryv1.Role_ROLE_USER && m.Role != memoryv1.Role_ROLE_ASSISTANT {
			continue
		}
		out = append(out, consolidate.Message{ID: msgID(i), Seq: uint64(i + 1), User: m.Role == memoryv1.Role_ROLE_USER && m.Speaker == 0, Text: m.Content})
	}
	return out
}

func msgID(i int) string { return fmt.Sprintf("m%d", i) }

// memoryStore is the user's scope as consolidation leaves it: per key its
// versions, the last current.
type memoryStore struct {
	keys    []string
	hidden  map[string]bool // consolidated into another key
	history map[string][]consolidate.Fact
	all     []consolidate.Fact // every fact extracted, as extracted
}

func (m *memoryStore) write(f consolidate.Fact) {
	if m.history == nil {
		m.history = map[string][]consolidate.Fact{}
	}
	m.all = append(m.all, f)
	if f.Type == consolidate.Episodic {
		return // the agent's scope
	}
	k := f.Key()
	if f.Retract { // the entry is deleted when it holds the value
		if h := m.history[k]; len(h) > 0 && !m.hidden[k] && strings.EqualFold(h[len(h)-1].Value, f.Value) {
			if m.hidden == nil {
				m.hidden = map[string]bool{}
			}
			m.hidden[k] = true
		}
		return
	}
	h := m.history[k]
	if len(h) > 0 && strings.EqualFold(h[len(h)-1].Value, f.Value) {
		return // unchanged
	}
	if len(h) == 0 {
		m.keys = append(m.keys, k)
	}
	m.history[k] = append(h, f)
	delete(m.hidden, k)
	if f.Replaces == "" {
		return
	}
	for _, o := range m.current() { // consolidated_into, as the node does
		if o.Key() != k && strings.EqualFold(o.Value, f.Replaces) {
			if m.hidden == nil {
				m.hidden = map[string]bool{}
			}
			m.hidden[o.Key()] = true
		}
	}
}

func (m *memoryStore) current() []consolidate.Fact {
	out := make([]consolidate.Fact, 0, len(m.keys))
	for _, k := range m.keys {
		if m.hidden[k] {
			continue
		}
		h := m.history[k]
		out = append(out, h[len(h)-1])
	}
	return out
}

func (m *memoryStore) known() []consolidate.Fact {
	var out []consolidate.Fact
	for _, f := range m.current() {
		if f.Type == consolidate.Semantic {
			out = append(out, f)
		}
	}
	return out
}

// valueMatch: v and p name the same value (one holds the other, case
// aside, at least three letters).
func valueMatch(v, p string) bool {
	v, p = strings.ToLower(strings.TrimSpace(v)), strings.ToLower(strings.TrimSpace(p))
	if len(v) < 3 || len(p) < 3 {
		return v == p && v != ""
	}
	return strings.Contains(v, p) || strings.Contains(p, v)
}

func fromTurn(f consolidate.Fact, turns ...int) bool {
	for _, id := range f.MessageIDs {
		for _, t := range turns {
			if id == msgID(t) {
				return true
			}
		}
	}
	return false
}

// score adds m's figures for conv to row.
func (m *memoryStore) score(conv *dialoggen.Conversation, row *ExtractionRow) {
	var user []dialoggen.Planted
	for _, p := range conv.Planted {
		if p.Owner == 0 {
			user = append(user, p)
		}
	}
	for _, f := range m.all {
		row.Extracted++
		for _, p := range user {
			turns := append(slices.Clone(p.Evidence), p.Turns...)
			if !fromTurn(f, turns...) {
				continue
			}
			ok := false
			for _, v := range append(slices.Clone(p.Values), p.Also...) {
				ok = ok || valueMatch(f.Value, v)
			}
			if ok {
				row.Correct++
				break
			}
		}
	}
	cur := m.current()
	for _, p := range user {
		for i, v := range p.Values {
			row.Planted++
			turns := []int{p.Turns[i]}
			if i == 0 {
				turns = p.Evidence
			}
			for _, f := range m.all {
				if fromTurn(f, turns...) && valueMatch(f.Value, v) {
					row.Recalled++
					break
				}
			}
		}
		if len(p.Values) < 2 {
			continue
		}
		row.Corrected++
		newer, old := false, false
		for _, f := range cur {
			newer = newer || valueMatch(f.Value, p.Values[len(p.Values)-1])
			for _, v := range p.Values[:len(p.Values)-1] {
				old = old || valueMatch(f.Value, v)
			}
		}
		if newer && !old {
			row.Resolved++
		}
	}
	for _, q := range conv.Questions {
		if q.Category != dialoggen.SingleHop && q.Category != dialoggen.Correction {
			continue
		}
		own := true
		for _, e := range q.Evidence {
			own = own && conv.Messages[e].Speaker == 0
		}
		if !own {
			continue
		}
		text := m.section(q.Text, cur)
		row.Questions++
		answer := hasNeeds(text, q.Needs)
		if answer {
			row.Answered++
		}
		if q.Category == dialoggen.Correction {
			row.CorrQuestions++
			if !answer && containsAny(text, q.Superseded) {
				row.Stale++
			}
		}
	}
}

// section is the memory section a new session's first question gets: the
// benchMemoryMatches entries BM25 ranks best for q, then the
// benchMemoryTop newest others.
func (m *memoryStore) section(q string, cur []consolidate.Fact) string {
	if len(cur) == 0 {
		return ""
	}
	type doc struct {
		i     int
		tf    map[string]uint32
		n     uint32
		score float64
	}
	docs := make([]doc, len(cur))
	var total float64
	df := map[string]uint64{}
	for i, f := range cur {
		tf, n := swap.TermFreqs(f.Text())
		docs[i] = doc{i: i, tf: tf, n: n}
		total += float64(n)
		for t := range tf {
			df[t]++
		}
	}
	avg := total / float64(len(docs))
	bm := swap.DefaultBM25()
	for _, t := range swap.QueryTerms(q) {
		idf := bm.IDF(uint64(len(docs)), df[t])
		for i := range docs {
			if c := docs[i].tf[t]; c > 0 {
				docs[i].score += bm.TermScore(c, docs[i].n, avg, idf)
			}
		}
	}
	ranked := slices.Clone(docs)
	slices.SortStableFunc(ranked, func(a, b doc) int { return cmp.Compare(b.score, a.score) })
	chosen := map[int]bool{}
	var b strings.Builder
	for _, d := range ranked {
		if len(chosen) == benchMemoryMatches || d.score <= 0 {
			break
		}
		chosen[d.i] = true
		b.WriteString(cur[d.i].Text() + "\n")
	}
	for i, n := len(cur)-1, 0; i >= 0 && n < benchMemoryTop; i-- {
		if !chosen[i] {
			chosen[i] = true
			n++
			b.WriteString(cur[i].Text() + "\n")
		}
	}
	return b.String()
}

// misses lists planted values of the user the extractor did not read.
func (m *memoryStore) misses(conv *dialoggen.Conversation, n int) []string {
	var out []string
	for _, p := range conv.Planted {
		if p.Owner != 0 {
			continue
		}
		for i, v := range p.Values {
			turn := p.Turns[i]
			found := false
			for _, f := range m.all {
				if fromTurn(f, turn) && valueMatch(f.Value, v) {
					found = true
				}
			}
			if !found && len(out) < n {
				out = append(out, fmt.Sprintf("%s %q in %q", p.Kind, v, conv.Messages[turn].Content))
			}
		}
	}
	return out
}
