package facts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Score returns the salience of a unit: the sum of the weights (W) of the
// features it carries (each counted once), or 0 when it is filler. user
// marks a unit the user wrote, toolResult one of a tool result; answered a
// unit whose question, if it is one, was answered (a reply follows it):
// an answered question is context, no longer open, and weighs half.
func Score(s string, user, toolResult, answered bool) int {
	if IsFiller(s) {
		return 0
	}
	lower := strings.ToLower(s)
	score := 0
	f, date, fact := Of(s, lower)
	decision := ContainsAny(lower, DecisionWords)
	switch {
	case decision && fact:
		score += W.Decision
	case decision:
		score += W.DecisionBare // "we will keep it simple", "so agree on it first"
	}
	if !decision && f.IDs == 0 && f.Nums == 0 && (StartsWithAny(lower, GreetingStarts) || ContainsAny(lower, SmallTalk)) {
		return 0
	}
	if !fact && ContainsAny(lower, AckPhrases) {
		return 0 // "Got it, I'll keep that in mind."
	}
	if strings.HasSuffix(strings.TrimRight(s, "\"') "), "?") {
		switch {
		case !user:
			if fact {
				score += W.Question / 2 // "anything else?" is not a question worth keeping
			}
		case answered:
			score += W.Question / 2
		case fact:
			score += W.Question + W.UserAsks
		default:
			score += W.Question
		}
	}
	// Each id, number and name is a fact of its own: the first of a kind
	// counts in full, up to two more a third each.
	more := func(n, w int) int {
		if n == 0 {
			return 0
		}
		return w + min(n-1, 2)*w/3
	}
	score += more(f.IDs, W.ID) + more(f.Nums, W.Number) + more(f.Names, W.Name)
	if date {
		score += W.Date
	}
	if toolResult {
		outcome := ContainsAny(lower, OutcomeWords)
		if score > 0 || outcome {
			score += W.ToolResult
		}
		if outcome {
			score += W.Outcome
		}
	}
	if score == 0 {
		return 0
	}
	if user {
		score += W.User
	}
	return score
}

// IsFiller reports a unit made only of greeting and acknowledgement words
// (and names: "Thanks, Alice!" is filler).
func IsFiller(s string) bool {
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	if len(words) == 0 {
		return !strings.ContainsFunc(s, unicode.IsDigit)
	}
	if strings.ContainsFunc(s, unicode.IsDigit) {
		return false
	}
	for i, w := range words {
		if FillerWords[strings.ToLower(w)] {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(w); i > 0 && unicode.IsUpper(r) {
			continue // a name
		}
		return false
	}
	return true
}
