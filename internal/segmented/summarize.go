package segmented

import (
	"fmt"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Summary sources.
const (
	SourceExtractive = "extractive"
	SourceLLM        = "llm"
)

// Summarizer condenses a run of L1 entries into at most maxTokens tokens
// (counted with tok). Only Decide calls it; its output is recorded in the
// event, so replay never calls it again. The compression policy only ever
// gives it verbatim messages, never an earlier summary: a summary, once
// made, is not summarized again with newer messages (the property tests
// check every summary the policy makes). entries is only valid during the
// call (it is part of the state's L1): it must not be kept or modified.
type Summarizer interface {
	Summarize(entries []*memoryv1.L1Entry, maxTokens int, tok Tokenizer) string
}

// Condenser condenses the oldest L2 summaries, when they are archived, into
// one coarser summary of at most maxTokens that stays in L2. A Summarizer
// that does not implement it gets Extractive's.
type Condenser interface {
	Condense(sums []*memoryv1.Summary, maxTokens int, tok Tokenizer) string
}

func condenserOf(s Summarizer) Condenser {
	if c, ok := s.(Condenser); ok {
		return c
	}
	return Extractive{}
}

// Extractive is the deterministic default Summarizer and Condenser. It
// selects by salience, not by age: it splits the text into units
// (sentences, long ones trimmed to their salient clauses; the fields of a
// JSON tool result, see jsonLines), scores each by the key
// facts it carries (scoreUnit: decisions and commitments, open questions,
// ids, numbers, dates, names, tool calls and outcomes), drops filler
// (greetings, acknowledgements, units with no key fact) even when there is
// room, drops a unit whose words a kept unit already holds, and keeps the
// best units within the limit. Ties go to the unit ranked higher within its
// own message (or summary), so a tight limit still hears from every
// message. The kept units stay in conversation order, one line per message
// prefixed by the speaker. When no unit is salient, the best one is kept,
// clipped, so a summary is never empty.
type Extractive struct{}

var (
	_ Summarizer = Extractive{}
	_ Condenser  = Extractive{}
)

// Summarize implements Summarizer. A summary among entries (never from the
// policy; a caller measuring the summarizer might pass one) contributes its
// lines as Condense reads them.
func (Extractive) Summarize(entries []*memoryv1.L1Entry, maxTokens int, tok Tokenizer) string {
	if maxTokens <= 0 || len(entries) == 0 {
		return ""
	}
	names := map[string]string{} // tool call id -> tool name
	for _, e := range entries {
		for _, c := range e.GetMessage().GetToolCalls() {
			names[c.GetId()] = c.GetName()
		}
	}
	var us []unit
	var prefixes []string
	for _, e := range entries {
		m := e.GetMessage()
		if m == nil {
			us, prefixes = summaryUnits(e.GetSummary(), us, prefixes)
			continue
		}
		i := len(prefixes)
		prefixes = append(prefixes, speaker(m, names)+": ")
		user := m.GetRole() == memoryv1.Role_ROLE_USER
		tool := m.GetRole() == memoryv1.Role_ROLE_TOOL
		from := len(us)
		shapes := map[string]int{} // line shape -> rows of it kept
		last := map[string]int{}   // line shape -> index in us of its last row kept
		more := map[int]int{}      // index in us of a last row kept -> rows like it left out
		for _, u := range contentUnits(m.GetContent(), user, tool) {
			if tool && u.score > 0 {
				// Rows of data (lines of one shape): the first
				// maxRowsKept stand for the others, which are left
				// out; after the first, at half their salience.
				shape := lineShape(u.text)
				if shapes[shape] >= maxRowsKept {
					more[last[shape]]++
					continue
				}
				if shapes[shape] > 0 {
					u.score /= 2 // more of the same
				}
				shapes[shape]++
				last[shape] = len(us)
			}
			u.group = i
			us = append(us, u)
		}
		for j := from; j < len(us); j++ {
			if n := more[j]; n > 0 {
				us[j].text += fmt.Sprintf(" (+%d more like it)", n)
			}
		}
		for ci, c := range m.GetToolCalls() {
			text := "called " + c.GetName() + "(" + clipWords(c.GetArguments(), 16) + ")"
			us = append(us, unit{group: i, sent: -1 - ci, text: text, score: wToolCall + scoreUnit(c.GetArguments(), false, false)})
		}
	}
	return selectUnits(us, prefixes, maxTokens, tok)
}

// maxRowsKept is how many rows of one shape in a tool result are kept as
// units (see lineShape).
const maxRowsKept = 2

// contentUnits returns the scored units of a message's content: the lines
// of JSON (jsonLines), or its sentences (scoredUnits).
func contentUnits(content string, user, tool bool) []unit {
	lines, ok := jsonLines(content)
	if !ok {
		return scoredUnits(content, user, tool)
	}
	out := make([]unit, 0, len(lines))
	for i, l := range lines {
		l = clipWords(l, maxPieceWords)
		// Score the value only: keys (customer_id) are not facts. The
		// value is scored as the rest of a sentence, so that its first
		// word counts as a name when capitalized.
		_, v, found := strings.Cut(l, ": ")
		if !found {
			v = l
		}
		out = append(out, unit{sent: i, text: l, score: scoreUnit("is "+v, user, tool)})
	}
	return out
}

// Condense implements Condenser: the units of the summaries' lines,
// selected the same way (a line keeps its speaker).
func (Extractive) Condense(sums []*memoryv1.Summary, maxTokens int, tok Tokenizer) string {
	if maxTokens <= 0 || len(sums) == 0 {
		return ""
	}
	var us []unit
	var prefixes []string
	for _, sum := range sums {
		us, prefixes = summaryUnits(sum, us, prefixes)
	}
	return selectUnits(us, prefixes, maxTokens, tok)
}

// summaryUnits appends the units of a summary's lines (one group per line,
// keeping its speaker) to us and their prefixes to prefixes.
func summaryUnits(sum *memoryv1.Summary, us []unit, prefixes []string) ([]unit, []string) {
	for _, line := range summaryLines(sum.GetText()) {
		who, text, ok := strings.Cut(line, ": ")
		if !ok || strings.ContainsAny(who, ".?!") || len(who) > 40 {
			who, text = "", line
		}
		g := len(prefixes)
		if who != "" {
			prefixes = append(prefixes, who+": ")
		} else {
			prefixes = append(prefixes, "")
		}
		user, tool := who == "User", strings.HasPrefix(who, "Tool")
		for _, u := range scoredUnits(text, user, tool) {
			if strings.HasPrefix(u.text, "called ") {
				u.score += wToolCall
			}
			u.group = g
			us = append(us, u)
		}
	}
	return us, prefixes
}

// summaryLines returns the lines of a summary's text without its header.
func summaryLines(text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || (i == 0 && strings.HasSuffix(line, ":") && strings.Contains(line, "ummary of message")) {
			continue
		}
		out = append(out, line)
	}
	return out
}

// selectUnits keeps the most salient units within maxTokens (see
// Extractive) and assembles them in their original order.
func selectUnits(us []unit, prefixes []string, maxTokens int, tok Tokenizer) string {
	// Rank of each unit within its group, by score (0 = the group's best).
	order := make([]int, len(us))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if us[a].group != us[b].group {
			return us[a].group - us[b].group
		}
		return us[b].score - us[a].score
	})
	rank := make([]int, len(us))
	for i, ui := range order {
		if i > 0 && us[order[i-1]].group == us[ui].group {
			rank[ui] = rank[order[i-1]] + 1
		}
	}
	// Selection order: salience, then rank within the group, then age.
	slices.SortStableFunc(order, func(a, b int) int {
		if us[a].score != us[b].score {
			return us[b].score - us[a].score
		}
		if rank[a] != rank[b] {
			return rank[a] - rank[b]
		}
		return a - b
	})
	chosen := make([]bool, len(us))
	started := make([]bool, len(prefixes))
	var keptWords []map[string]bool
	seen := map[string]bool{}
	budget := maxTokens
	for _, i := range order {
		u := us[i]
		if u.score < minSalience {
			break // filler: never kept while a salient unit exists
		}
		key := strings.ToLower(u.text)
		if seen[key] {
			continue
		}
		words, keys := contentWords(u.text), keyTokens(u.text)
		if slices.ContainsFunc(keptWords, func(k map[string]bool) bool { return subsumed(words, k) || redundant(words, keys, k) }) {
			continue
		}
		cost := tok.Count(" " + u.text)
		if !started[u.group] {
			cost += tok.Count("\n" + prefixes[u.group])
		}
		if cost > budget {
			continue
		}
		budget -= cost
		chosen[i], started[u.group], seen[key] = true, true, true
		keptWords = append(keptWords, words)
	}
	for {
		text := assemble(us, chosen, prefixes)
		if text == "" {
			break
		}
		if tok.Count(text) <= maxTokens {
			return text
		}
		// The estimate was short: drop the last chosen unit in
		// selection order (the least salient) and try again.
		for j := len(order) - 1; j >= 0; j-- {
			if chosen[order[j]] {
				chosen[order[j]] = false
				break
			}
		}
	}
	// Nothing salient fits whole: the best unit, clipped to the limit.
	if len(order) == 0 {
		return ""
	}
	best := us[order[0]]
	return truncateTokens(prefixes[best.group]+clipWords(best.text, 16), maxTokens, tok)
}

// assemble writes the chosen units in order: one line per group, prefixed
// by its speaker; clauses of one sentence joined by ", ", sentences by " ".
func assemble(us []unit, chosen []bool, prefixes []string) string {
	var b strings.Builder
	lastGroup, lastSent, prev := -1, 0, ""
	for i, u := range us {
		if !chosen[i] {
			continue
		}
		switch {
		case u.group != lastGroup:
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(prefixes[u.group])
		case u.sent == lastSent && u.sent >= 0:
			b.WriteString(", ")
		case strings.HasSuffix(prev, ".") || strings.HasSuffix(prev, "?") || strings.HasSuffix(prev, "!"):
			b.WriteString(" ")
		default:
			b.WriteString("; ") // lines without end punctuation (tool output)
		}
		b.WriteString(u.text)
		lastGroup, lastSent, prev = u.group, u.sent, u.text
	}
	return b.String()
}

func speaker(m *memoryv1.Message, toolNames map[string]string) string {
	switch m.GetRole() {
	case memoryv1.Role_ROLE_USER:
		return "User"
	case memoryv1.Role_ROLE_ASSISTANT:
		return "Assistant"
	case memoryv1.Role_ROLE_TOOL:
		if name := toolNames[m.GetToolCallId()]; name != "" {
			return "Tool " + name
		}
		if m.GetName() != "" {
			return "Tool " + m.GetName()
		}
		return "Tool result"
	default:
		return "System"
	}
}

// truncateTokens returns the longest word prefix of s within maxTokens.
func truncateTokens(s string, maxTokens int, tok Tokenizer) string {
	if tok.Count(s) <= maxTokens {
		return s
	}
	words := strings.Fields(s)
	lo, hi := 0, len(words) // invariant: words[:lo] fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if tok.Count(strings.Join(words[:mid], " ")) <= maxTokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return strings.Join(words[:lo], " ")
}
