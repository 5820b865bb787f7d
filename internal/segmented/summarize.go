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

// Summarizer condenses a run of verbatim messages into at most maxTokens
// tokens (counted with tok). Only Decide calls it; its output is recorded
// in the event, so replay never calls it again. It is only ever given
// messages, never an earlier summary: a summary, once made, is not
// summarized again with newer messages. msgs is only valid during the call
// (the messages belong to the state): it must not be kept or modified.
type Summarizer interface {
	Summarize(msgs []*memoryv1.Message, maxTokens int, tok Tokenizer) string
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

// Extractive is the deterministic default Summarizer. It keeps whole
// sentences, preferring, in order: the user's questions, decisions,
// sentences with numbers, sentences with names (capitalized words inside a
// sentence), tool calls; then other user sentences, then the rest.
// The kept sentences stay in conversation order, grouped by message and
// prefixed by the speaker, and the result fits maxTokens.
type Extractive struct{}

var (
	_ Summarizer = Extractive{}
	_ Condenser  = Extractive{}
)

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
func (Extractive) Summarize(msgs []*memoryv1.Message, maxTokens int, tok Tokenizer) string {
	if maxTokens <= 0 || len(msgs) == 0 {
		return ""
	}
	var pieces []piece
	seen := map[string]bool{}
	add := func(p piece) {
		key := strings.ToLower(p.text)
		if !seen[key] {
			seen[key] = true
			pieces = append(pieces, p)
		}
	}
	prefixes := make([]string, len(msgs))
	for i, m := range msgs {
		prefixes[i] = speaker(m) + ": "
		user := m.GetRole() == memoryv1.Role_ROLE_USER
		for _, sn := range splitSentences(m.GetContent()) {
			add(piece{msg: i, text: sn, score: scoreSentence(sn, user)})
		}
		for _, c := range m.GetToolCalls() {
			add(piece{msg: i, text: "called " + c.GetName() + "(" + clipWords(c.GetArguments(), 12) + ")", score: 8})
		}
	}
	return selectPieces(pieces, prefixes, maxTokens, tok)
}

// Condense implements Condenser: the sentences of the summaries' lines,
// selected the same way.
func (Extractive) Condense(sums []*memoryv1.Summary, maxTokens int, tok Tokenizer) string {
	if maxTokens <= 0 || len(sums) == 0 {
		return ""
	}
	var pieces []piece
	var prefixes []string
	seen := map[string]bool{}
	for _, sum := range sums {
		for _, line := range summaryLines(sum.GetText()) {
			who, text, ok := strings.Cut(line, ": ")
			if !ok {
				who, text = "", line
			}
			prefixes = append(prefixes, who+": ")
			i := len(prefixes) - 1
			for _, sn := range splitSentences(text) {
				key := strings.ToLower(sn)
				if !seen[key] {
					seen[key] = true
					pieces = append(pieces, piece{msg: i, text: sn, score: scoreSentence(sn, who == "User")})
				}
			}
		}
	}
	return selectPieces(pieces, prefixes, maxTokens, tok)
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

// selectPieces keeps the best pieces (by score, then age) within maxTokens,
// in their original order.
func selectPieces(pieces []piece, prefixes []string, maxTokens int, tok Tokenizer) string {
	for i := range pieces {
		pieces[i].order = i
	}
	// Greedy selection by score (then age), with the token cost of each
	// piece estimated on its own; the assembled text is checked below.
	byScore := slices.Clone(pieces)
	slices.SortStableFunc(byScore, func(a, b piece) int { return b.score - a.score })
	budget := maxTokens
	chosen := make([]bool, len(pieces))
	started := make([]bool, len(prefixes))
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
			if text == "" {
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
	return truncateTokens(prefixes[best.msg]+best.text, maxTokens, tok)
}

func assemble(pieces []piece, chosen []bool, prefixes []string) string {
	var b strings.Builder
	last := -1
	for i, p := range pieces {
		if !chosen[i] {
			continue
		}
		if p.msg != last {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
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
