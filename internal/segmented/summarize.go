package segmented

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Summary sources.
const (
	SourceExtractive = "extractive"
	SourceLLM        = "llm"
)

// Summarizer condenses a run of L1 entries (messages and older summaries)
// into at most maxTokens tokens (counted with tok). Only Decide calls it; its
// output is recorded in the event, so replay never calls it again. entries
// is only valid during the call (it is part of the state's L1, which
// changes in place): it must not be kept or modified.
type Summarizer interface {
	Summarize(entries []*memoryv1.L1Entry, maxTokens int, tok Tokenizer) string
}

// Extractive is the deterministic default Summarizer. It keeps whole
// sentences, preferring, in order: earlier summaries, the user's questions,
// decisions, sentences with numbers, sentences with names (capitalized words
// inside a sentence), tool calls; then other user sentences, then the rest.
// The kept sentences stay in conversation order, grouped by message and
// prefixed by the speaker, and the result fits maxTokens.
type Extractive struct{}

var _ Summarizer = Extractive{}

// maxPieceWords bounds one kept sentence, so one endless line cannot take the
// whole summary.
const maxPieceWords = 60

type piece struct {
	msg   int // index of the entry it comes from
	text  string
	score int
	order int
}

var decisionWords = []string{
	"decide", "decided", "decision", "agree", "agreed", "chose", "choose", "chosen",
	"will", "plan", "must", "confirm", "confirmed", "approve", "approved", "settled",
	"let's", "we'll", "going to", "conclusion", "resolved", "final",
}

// Summarize implements Summarizer.
func (Extractive) Summarize(entries []*memoryv1.L1Entry, maxTokens int, tok Tokenizer) string {
	if maxTokens <= 0 || len(entries) == 0 {
		return ""
	}
	var pieces []piece
	seen := map[string]bool{} // drop repeated sentences (summaries of summaries)
	add := func(p piece) {
		key := strings.ToLower(p.text)
		if !seen[key] {
			seen[key] = true
			pieces = append(pieces, p)
		}
	}
	prefixes := make([]string, len(entries))
	for i, e := range entries {
		if sum := e.GetSummary(); sum != nil {
			for _, sn := range splitSentences(strings.TrimPrefix(sum.Text, summaryHeader)) {
				add(piece{msg: i, text: sn, score: 50})
			}
			continue
		}
		m := e.GetMessage()
		prefixes[i] = speaker(m) + ": "
		user := m.GetRole() == memoryv1.Role_ROLE_USER
		for _, sn := range splitSentences(m.GetContent()) {
			add(piece{msg: i, text: sn, score: scoreSentence(sn, user)})
		}
		for _, c := range m.GetToolCalls() {
			add(piece{msg: i, text: "called " + c.GetName() + "(" + clipWords(c.GetArguments(), 12) + ")", score: 8})
		}
	}
	for i := range pieces {
		pieces[i].order = i
	}
	// Greedy selection by score (then age), with the token cost of each
	// piece estimated on its own; the assembled text is checked below.
	byScore := slices.Clone(pieces)
	slices.SortStableFunc(byScore, func(a, b piece) int { return b.score - a.score })
	budget := maxTokens - tok.Count(summaryHeader)
	chosen := make([]bool, len(pieces))
	started := make([]bool, len(entries))
	for _, p := range byScore {
		cost := tok.Count(" " + p.text)
		if !started[p.msg] {
			cost += tok.Count("\n" + prefixes[p.msg])
		}
		if cost > budget {
			continue
		}
		budget -= cost
		chosen[p.order] = true
		started[p.msg] = true
	}
	for {
		text := assemble(pieces, chosen, prefixes)
		if tok.Count(text) <= maxTokens {
			if text == summaryHeader {
				break // nothing fitted: fall through to truncation
			}
			return text
		}
		// Drop the lowest-scored chosen piece and try again.
		drop := -1
		for i := len(byScore) - 1; i >= 0; i-- {
			if chosen[byScore[i].order] {
				drop = byScore[i].order
				break
			}
		}
		if drop < 0 {
			break
		}
		chosen[drop] = false
	}
	// Nothing fits whole: cut the best piece to the budget, word by word.
	if len(byScore) == 0 {
		return ""
	}
	best := byScore[0]
	return truncateTokens(summaryHeader+"\n"+prefixes[best.msg]+best.text, maxTokens, tok)
}

// summaryHeader starts every extractive summary.
const summaryHeader = "Summary:"

func assemble(pieces []piece, chosen []bool, prefixes []string) string {
	var b strings.Builder
	b.WriteString(summaryHeader)
	last := -1
	for i, p := range pieces {
		if !chosen[i] {
			continue
		}
		if p.msg != last {
			b.WriteString("\n")
			b.WriteString(prefixes[p.msg])
			b.WriteString(p.text)
			last = p.msg
			continue
		}
		b.WriteString(" ")
		b.WriteString(p.text)
	}
	return b.String()
}

func speaker(m *memoryv1.Message) string {
	switch m.GetRole() {
	case memoryv1.Role_ROLE_USER:
		return "User"
	case memoryv1.Role_ROLE_ASSISTANT:
		return "Assistant"
	case memoryv1.Role_ROLE_TOOL:
		return fmt.Sprintf("Tool result (%s)", m.GetToolCallId())
	default:
		return "System"
	}
}

func scoreSentence(s string, user bool) int {
	score := 0
	if user {
		score += 5
		if strings.HasSuffix(s, "?") {
			score += 40
		}
	}
	lower := strings.ToLower(s)
	for _, w := range decisionWords {
		if containsWord(lower, w) {
			score += 20
			break
		}
	}
	if strings.IndexFunc(s, unicode.IsDigit) >= 0 {
		score += 15
	}
	if hasName(s) {
		score += 10
	}
	return score
}

// containsWord reports whether w occurs in s delimited by non-letters.
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before, _ := utf8.DecodeLastRuneInString(s[:j])
		after, _ := utf8.DecodeRuneInString(s[j+len(w):])
		if (j == 0 || !unicode.IsLetter(before)) && (j+len(w) == len(s) || !unicode.IsLetter(after)) {
			return true
		}
		i = j + 1
	}
}

// hasName reports a capitalized word that does not start the sentence.
func hasName(s string) bool {
	words := strings.Fields(s)
	for i, w := range words {
		if i == 0 || w == "I" {
			continue
		}
		r, _ := utf8.DecodeRuneInString(w)
		if unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

// splitSentences splits text into trimmed sentences at ., ?, ! followed by
// a space, and at line breaks; each is clipped to maxPieceWords.
func splitSentences(text string) []string {
	var out []string
	flush := func(s string) {
		s = strings.TrimSpace(s)
		if s != "" {
			out = append(out, clipWords(s, maxPieceWords))
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			flush(text[start:i])
			start = i + 1
		case (c == '.' || c == '?' || c == '!') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n'):
			flush(text[start : i+1])
			start = i + 1
		}
	}
	flush(text[start:])
	return out
}

// maxPieceBytes bounds one kept sentence in bytes (a word can be huge).
const maxPieceBytes = 480

func clipWords(s string, n int) string {
	words := strings.Fields(s)
	var out string
	if len(words) > n {
		out = strings.Join(words[:n], " ") + " …"
	} else {
		out = strings.Join(words, " ")
	}
	if len(out) > maxPieceBytes {
		out = truncate(out, maxPieceBytes)
	}
	return out
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
