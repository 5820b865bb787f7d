package segmented

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/facts"
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
	// The units of the latest user message are us[userFrom:], of group
	// userGroup (-1: none yet).
	userFrom, userGroup := 0, -1
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
			us = append(us, unit{group: i, sent: -1 - ci, text: text, score: facts.W.ToolCall + scoreUnit(c.GetArguments(), false, false)})
		}
		if !user {
			answerQuestions(us[userFrom:from], userGroup)
		} else {
			userFrom, userGroup = from, i
		}
	}
	return selectUnits(us, prefixes, maxTokens, tok, true)
}

// answerQuestions rescores the questions among us of the user message
// group as answered: a reply follows them.
func answerQuestions(us []unit, group int) {
	for j := range us {
		if us[j].group == group && strings.HasSuffix(us[j].text, "?") {
			us[j].score = facts.Score(us[j].text, true, false, true)
		}
	}
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
		u := unit{sent: i, text: l, short: jsonShort(l), score: scoreUnit("is "+v, user, tool)}
		out = append(out, u)
	}
	return out
}

// jsonShort returns the short form of a line of jsonLines, or "": a value
// clipped to maxShortValueWords, and of an element ("key[i]: k=v, k=v")
// only the pairs whose value carries a key fact.
func jsonShort(l string) string {
	k, v, found := strings.Cut(l, ": ")
	if !found {
		return ""
	}
	var out string
	if strings.HasSuffix(k, "]") {
		var pairs []string
		for _, p := range strings.Split(v, ", ") {
			pk, pv, ok := strings.Cut(p, "=")
			if !ok || !facts.HasKeyFact("is "+pv) {
				continue
			}
			pairs = append(pairs, pk+"="+clipWords(pv, maxShortValueWords))
		}
		if len(pairs) == 0 {
			return ""
		}
		out = k + ": " + strings.Join(pairs, ", ")
	} else {
		out = k + ": " + clipWords(v, maxShortValueWords)
	}
	if len(out) >= len(l) {
		return ""
	}
	return out
}

// maxShortValueWords bounds a value in the short form of a JSON line.
const maxShortValueWords = 8

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
	return selectUnits(us, prefixes, maxTokens, tok, false)
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
				u.score += facts.W.ToolCall
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
// Extractive) and assembles them in their original order. It keeps facts
// first and words second: a first pass takes the salient units in
// selection order, each in its shortest form (unit.core, or unit.short;
// with coreFirst false, as Condense does with lines already short, the
// core form only when the short one does not fit),
// skipping a unit that adds no key token (an id, number or name) to the
// units taken and one whose words they hold; a second pass gives the units
// taken, in the same order, their text, or their short form, while it
// fits.
func selectUnits(us []unit, prefixes []string, maxTokens int, tok Tokenizer, coreFirst bool) string {
	supersede(us)
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
	form := make([]keptForm, len(us))
	started := make([]bool, len(prefixes))
	var keptWords []map[string]bool
	keptKeys := map[string]bool{}
	seen := map[string]bool{}
	var picked []int // the units taken, in selection order
	var keptTopics []map[string]bool
	// fit assembles the units kept, within maxTokens: while the text is
	// over (the estimates were short), the last unit taken that has one
	// gets its next shorter form, or, when none has, the last unit taken
	// is left out.
	fit := func() string {
		for {
			text := assemble(us, form, prefixes)
			if text == "" || tok.Count(text) <= maxTokens {
				return text
			}
			shrunk := false
			for j := len(picked) - 1; j >= 0 && !shrunk; j-- {
				i := picked[j]
				for f := form[i] - 1; form[i] != keptNot && f > keptNot && !shrunk; f-- {
					if us[i].has(f) {
						form[i], shrunk = f, true
					}
				}
			}
			for j := len(picked) - 1; j >= 0 && !shrunk; j-- {
				if i := picked[j]; form[i] != keptNot {
					form[i], shrunk = keptNot, true
				}
			}
		}
	}
	// headCost is the cost of starting group g: its speaker's prefix on a
	// line of its own, or "; " when the nearest group kept before or after
	// it has the same speaker (assemble joins them on one line).
	headCost := func(g int) int {
		for d := -1; d <= 1; d += 2 {
			for h := g + d; h >= 0 && h < len(prefixes); h += d {
				if started[h] {
					if prefixes[h] == prefixes[g] && prefixes[g] != "" {
						return 1
					}
					break
				}
			}
		}
		return tok.Count("\n" + prefixes[g])
	}
	// The cost of a unit counts its speaker's prefix when its group has
	// none kept yet, though consecutive groups of one speaker share one
	// line: what that leaves over is filled again, up to fillRounds times.
	// What the rounds test of a unit, computed once per unit.
	type unitWords struct {
		key         string          // lower-cased text
		words       map[string]bool // facts.ContentWords
		keys        []string        // facts.KeyTokens of the shorter form
		topic       map[string]bool // topicWords
		initialized bool
	}
	uw := make([]unitWords, len(us))
	wordsOf := func(i int) *unitWords {
		w := &uw[i]
		if !w.initialized {
			t := us[i].text
			*w = unitWords{strings.ToLower(t), facts.ContentWords(t), facts.KeyTokens(us[i].shorter()), topicWords(t), true}
		}
		return w
	}
	budget := maxTokens
	text := ""
	rounds := 1 // Condense: lines already short, one round (see coreFirst)
	if coreFirst {
		rounds = fillRounds
	}
	for fill := 0; fill < rounds && budget > 0; fill++ {
		before := len(picked)
		// Pass 1, in two rounds: a unit on the topic of one taken (another
		// row of a list, the same statement about another value) waits for
		// the second round, so the units on other topics come first.
		var later []int
		for round, units := range [][]int{order, nil} {
			if round == 1 {
				units = later
			}
			for _, i := range units {
				u := us[i]
				if u.score < facts.W.MinSalience {
					break // filler: never kept while a salient unit exists
				}
				w := wordsOf(i)
				key, words, keys := w.key, w.words, w.keys
				if seen[key] {
					continue
				}
				if len(keys) > 0 && !slices.ContainsFunc(keys, func(k string) bool { return !keptKeys[k] }) {
					continue // every key fact of it is kept already
				}
				if slices.ContainsFunc(keptWords, func(k map[string]bool) bool { return subsumed(words, k) || redundant(words, keys, k) }) {
					continue
				}
				topic := w.topic
				if round == 0 && slices.ContainsFunc(keptTopics, func(k map[string]bool) bool { return sameTopic(topic, k) }) {
					later = append(later, i)
					continue
				}
				head := 0
				if !started[u.group] {
					head = headCost(u.group)
				}
				f := keptShort
				if u.core != "" && coreFirst {
					f = keptCore
				}
				cost := head + tok.Count(" "+u.form(f))
				if cost > budget && u.core != "" && !coreFirst {
					f, cost = keptCore, head+tok.Count(" "+u.core)
				}
				if cost > budget {
					continue
				}
				budget -= cost
				form[i], started[u.group], seen[key] = f, true, true
				keptWords = append(keptWords, words)
				keptTopics = append(keptTopics, topic)
				for _, k := range keys {
					keptKeys[k] = true
				}
				picked = append(picked, i)
			}
		}
		text = fit()
		if text == "" {
			break
		}
		budget = maxTokens - tok.Count(text)
		if len(picked) == before {
			break
		}
	}
	if text != "" {
		// Pass 2: the units taken, in selection order, as whole as fits.
		for _, i := range picked {
			have := tok.Count(" " + us[i].form(form[i]))
			for _, f := range []keptForm{keptText, keptShort} {
				if f <= form[i] {
					break
				}
				if extra := tok.Count(" "+us[i].form(f)) - have; extra <= budget {
					budget -= extra
					form[i] = f
					break
				}
			}
		}
		text = fit()
	}
	if text != "" {
		return text
	}
	// Nothing salient fits whole: the best unit, clipped to the limit.
	if len(order) == 0 {
		return ""
	}
	best := us[order[0]]
	text = best.shorter()
	if best.core != "" && tok.Count(prefixes[best.group]+text) > maxTokens {
		text = best.core
	}
	return truncateTokens(prefixes[best.group]+clipWords(text, 16), maxTokens, tok)
}

// fillRounds bounds how often selectUnits fills what its estimates left.
const fillRounds = 3

// keptForm is how selectUnits keeps a unit.
type keptForm uint8

const (
	keptNot   keptForm = iota
	keptCore           // its core form (unit.core)
	keptShort          // its short form (unit.short)
	keptText           // its text
)

// has reports whether u has form f of its own (a unit always has its text).
func (u unit) has(f keptForm) bool {
	switch f {
	case keptCore:
		return u.core != ""
	case keptShort:
		return u.short != ""
	}
	return f == keptText
}

// form returns u kept as f (a form it lacks falls back to the next longer).
func (u unit) form(f keptForm) string {
	switch {
	case f == keptCore && u.core != "":
		return u.core
	case f <= keptShort:
		return u.shorter()
	}
	return u.text
}

// assemble writes the units kept (form) in order: one line per group,
// prefixed by its speaker (consecutive groups of one speaker share it); clauses of one sentence joined by ", ",
// sentences by " " (or "; " after a unit without end punctuation).
func assemble(us []unit, form []keptForm, prefixes []string) string {
	var b strings.Builder
	lastGroup, lastSent, prev := -1, 0, ""
	for i, u := range us {
		if form[i] == keptNot {
			continue
		}
		text := u.form(form[i])
		switch {
		case u.group != lastGroup && (lastGroup < 0 || prefixes[u.group] != prefixes[lastGroup] || prefixes[u.group] == ""):
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(prefixes[u.group])
		case u.group == lastGroup && u.sent == lastSent && u.sent >= 0:
			b.WriteString(", ")
		case strings.HasSuffix(prev, ".") || strings.HasSuffix(prev, "?") || strings.HasSuffix(prev, "!"):
			b.WriteString(" ")
		default:
			b.WriteString("; ") // lines without end punctuation (tool output)
		}
		b.WriteString(text)
		lastGroup, lastSent, prev = u.group, u.sent, text
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
