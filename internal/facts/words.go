package facts

import (
	"embed"
	"fmt"
	"strconv"
	"strings"
)

//go:embed data/*.txt
var data embed.FS

// Word lists, read from data/ (one phrase a line, or for filler.txt
// words separated by spaces). Lower case.
var (
	// DecisionWords mark a decision or commitment (data/decision.txt).
	DecisionWords = lines("decision.txt")
	// OutcomeWords mark the outcome of a tool call (data/outcome.txt).
	OutcomeWords = lines("outcome.txt")
	// SmallTalk phrases mark small talk (data/smalltalk.txt).
	SmallTalk = lines("smalltalk.txt")
	// AckPhrases mark an acknowledgement (data/ack.txt).
	AckPhrases = lines("ack.txt")
	// GreetingStarts begin a greeting or thanks (data/greeting.txt).
	GreetingStarts = lines("greeting.txt")
	// DateWords name a date: months, weekdays, relative days (data/dates.txt).
	DateWords = lines("dates.txt")
	// Months are the month names in order (data/months.txt).
	Months = lines("months.txt")
	// ChangeWords mark a statement that may replace an earlier one
	// (data/change.txt).
	ChangeWords = lines("change.txt")
	// LeadingFiller are discourse markers stripped from the start of a
	// unit, each with its ", " (data/leading_filler.txt).
	LeadingFiller = suffixed(lines("leading_filler.txt"), ", ")
	// FillerWords make up greetings and pleasantries (data/filler.txt).
	FillerWords = set(words("filler.txt"))
)

// read returns the lines of data/name without comments and blank lines.
func read(name string) []string {
	b, err := data.ReadFile("data/" + name)
	if err != nil {
		panic(fmt.Sprintf("facts: %s: %v", name, err))
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		panic(fmt.Sprintf("facts: %s is empty", name))
	}
	return out
}

func lines(name string) []string {
	out := read(name)
	for _, l := range out {
		if l != strings.ToLower(l) {
			panic(fmt.Sprintf("facts: %s: %q is not lower case", name, l))
		}
	}
	return out
}

func words(name string) []string {
	var out []string
	for _, l := range lines(name) {
		out = append(out, strings.Fields(l)...)
	}
	return out
}

func suffixed(ws []string, s string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w + s
	}
	return out
}

func set(ws []string) map[string]bool {
	out := make(map[string]bool, len(ws))
	for _, w := range ws {
		out[w] = true
	}
	return out
}

// Weights are the feature weights of Score (data/weights.txt).
type Weights struct {
	Decision     int // a decision word with a key fact
	DecisionBare int // a decision word without one: mostly advice
	Question     int // ends with "?"
	UserAsks     int // ... asked by the user, about a key fact
	ID           int // INV-4471, T-100, #123
	Number       int // 42, 12.50, 30%
	Date         int // March 14, Friday, 2024-05-01
	Name         int // a capitalized word inside the sentence
	ToolResult   int // a unit of a tool result
	Outcome      int // error, failed, ok, ... (tool results)
	ToolCall     int // "called sql(...)"
	User         int // any user unit
	MinSalience  int // units scoring less are filler
}

// W holds the weights read from data/weights.txt.
var W = readWeights()

func readWeights() Weights {
	var w Weights
	fields := map[string]*int{
		"decision": &w.Decision, "decision_bare": &w.DecisionBare, "question": &w.Question,
		"user_asks": &w.UserAsks, "id": &w.ID, "number": &w.Number, "date": &w.Date, "name": &w.Name,
		"tool_result": &w.ToolResult, "outcome": &w.Outcome, "tool_call": &w.ToolCall, "user": &w.User,
		"min_salience": &w.MinSalience,
	}
	seen := map[string]bool{}
	for _, l := range read("weights.txt") {
		f := strings.Fields(l)
		if len(f) != 2 {
			panic(fmt.Sprintf("facts: weights.txt: %q: want \"name value\"", l))
		}
		p, ok := fields[f[0]]
		if !ok {
			panic(fmt.Sprintf("facts: weights.txt: unknown weight %q", f[0]))
		}
		v, err := strconv.Atoi(f[1])
		if err != nil || v < 0 {
			panic(fmt.Sprintf("facts: weights.txt: %s: %q is not a non-negative integer", f[0], f[1]))
		}
		*p = v
		seen[f[0]] = true
	}
	for k := range fields {
		if !seen[k] {
			panic(fmt.Sprintf("facts: weights.txt: weight %q missing", k))
		}
	}
	return w
}
