package dialoggen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Config shapes a generated conversation. The same Config always gives the
// same Conversation.
type Config struct {
	// Seed drives every random choice (the speakers' names too).
	Seed uint64
	// Sittings is the number of sittings (days to weeks apart).
	Sittings int
	// TurnsPerSitting: a sitting ends at the first segment boundary at or
	// past this many messages.
	TurnsPerSitting int
	// StartUnixNano is the day of the first sitting.
	StartUnixNano int64
	// Pools selects the word pools: "" the default ones, "holdout" a
	// held-out set with other items and other paraphrases (written apart
	// from the search's lexicon of related words).
	Pools string
}

// DefaultConfig is one conversation of `make bench-memory`: 24 sittings of
// about 24 turns (some 620 messages, 21k tokens, 140 questions).
func DefaultConfig() Config {
	return Config{
		Seed:            1,
		Sittings:        24,
		TurnsPerSitting: 24,
		StartUnixNano:   1_736_726_400_000_000_000, // Monday 2025-01-13 00:00 UTC
	}
}

// ErrConfig is returned (wrapped) by Validate and Generate for an invalid
// Config.
var ErrConfig = errors.New("dialoggen: invalid config")

// Validate checks the Config.
func (c Config) Validate() error {
	switch {
	case c.Sittings < 2:
		return fmt.Errorf("%w: Sittings must be >= 2, got %d", ErrConfig, c.Sittings)
	case c.Sittings > 60:
		return fmt.Errorf("%w: Sittings must be <= 60 (the value pools), got %d", ErrConfig, c.Sittings)
	case c.TurnsPerSitting < 8:
		return fmt.Errorf("%w: TurnsPerSitting must be >= 8, got %d", ErrConfig, c.TurnsPerSitting)
	case c.StartUnixNano < 0:
		return fmt.Errorf("%w: StartUnixNano must not be negative", ErrConfig)
	case !slices.Contains(PoolSets, c.Pools):
		return fmt.Errorf("%w: Pools must be one of %q, got %q", ErrConfig, PoolSets, c.Pools)
	}
	return nil
}

// Category classifies a question.
type Category string

// Question categories. The first five are asked after the whole
// conversation; the last three (continuity) in the middle of it, right
// after the turns they ask about.
const (
	SingleHop  Category = "single-hop" // one fact, paraphrased
	MultiHop   Category = "multi-hop"  // facts from several sittings
	Temporal   Category = "temporal"   // when: needs the sitting's date
	HowLong    Category = "how-long"   // time between two events of different sittings
	Correction Category = "correction" // a fact changed later: the current value
	LastTurns  Category = "last-turns" // what the assistant just suggested
	ToolResult Category = "tool-result"
	Plan       Category = "plan" // the plan being discussed
)

// EndCategories are the categories of Conversation.Questions, in report
// order; ContinuityCategories those of Conversation.Continuity.
var (
	EndCategories        = []Category{SingleHop, MultiHop, Temporal, HowLong, Correction}
	ContinuityCategories = []Category{LastTurns, ToolResult, Plan}
)

// Message is one turn. Speaker 0 (Speakers[0]) is the user, speaker 1 the
// assistant; a tool result has Speaker 1 and ROLE_TOOL.
type Message struct {
	Index      int
	Sitting    int
	Speaker    int
	Role       memoryv1.Role
	Content    string
	ToolCalls  []*memoryv1.ToolCall
	ToolCallID string
	// UnixNano is when the message was said (MessageInput.said_unix_nano).
	UnixNano int64
}

// Span is a half-open range [Start, End) of message indexes.
type Span struct{ Start, End int }

// Sitting is one session of the conversation.
type Sitting struct {
	Span
	UnixNano int64
	// DateForms are the ways the context may show the sitting's day: ISO
	// (the recalled section's header) and "Saturday, 8 March" (how the
	// first turn mentions it, when it does).
	DateForms []string
	// Mentioned: the first turn of the sitting names the date.
	Mentioned bool
}

// Question is one question with its evidence.
type Question struct {
	ID       string
	Category Category
	// Text is the question as the user asks it.
	Text string
	// At: asked after Messages[:At] (len(Messages) for the end questions).
	At int
	// Evidence are the message indexes a reader needs, ascending.
	Evidence []int
	// Answer is the expected answer in words.
	Answer string
	// Needs are what a context must hold to answer: for every group, one of
	// its strings. The value strings are in the evidence turns' content;
	// the date groups of temporal questions are the sitting's DateForms.
	Needs [][]string
	// Superseded are the values a correction replaced (oldest first).
	Superseded []string
	// Paraphrased: the question names what it asks about in other words
	// than the evidence turns (it may still share the name of a city or a
	// company). Questions not paraphrased reuse the turn's words for it.
	Paraphrased bool
}

// Conversation is a generated conversation with its questions.
type Conversation struct {
	Config       Config
	Speakers     [2]string
	SystemPrompt string
	Messages     []Message
	// Appends cut Messages into append requests: one message each, except
	// an assistant reply with tool calls, whose call, results and answer
	// are one append.
	Appends  []Span
	Sittings []Sitting
	// Questions are asked after the last message, in this order.
	Questions []Question
	// Continuity questions are asked mid-conversation (Question.At).
	Continuity []Question
	// Planted are the facts the conversation plants, in the order planted:
	// the ground truth of fact extraction (membench's extraction table).
	Planted []Planted
}

// Planted is one planted fact of a speaker.
type Planted struct {
	Owner int    // the speaker (0: the user)
	Kind  string // hobby, pet, family, job, trip, injury, purchase
	// Values are the value as planted, then its correction (if any), and
	// Turns the message each was said in (the last evidence turn; the
	// correction turn).
	Values []string
	Turns  []int
	// Evidence are the planting turns (two when the value came after the
	// friend asked).
	Evidence []int
	// Also are other values the planting turns state: the class, the
	// animal, the relative's name and relation, the employer and the role,
	// the item bought.
	Also []string
}

// Generate returns the conversation of cfg.
func Generate(cfg Config) (*Conversation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := newGen(cfg)
	g.run()
	c := &Conversation{
		Config: cfg, Speakers: g.names, Messages: g.msgs, Appends: g.appends, Sittings: g.sittings,
		SystemPrompt: fmt.Sprintf("You are %s, chatting with your friend %s. Keep track of what you both share; answer from the conversation.", g.names[1], g.names[0]),
	}
	for _, f := range g.facts {
		p := Planted{Owner: f.owner, Kind: f.kind, Evidence: f.evidence, Also: f.also}
		p.Values = append(append(p.Values, f.superseded...), f.value)
		p.Turns = []int{f.evidence[len(f.evidence)-1]}
		if len(f.superseded) > 0 {
			p.Turns = append(p.Turns, f.corrTurn)
		}
		c.Planted = append(c.Planted, p)
	}
	c.Questions = g.endQuestions()
	c.Continuity = g.cont
	for i := range c.Questions {
		c.Questions[i].ID = fmt.Sprintf("q%04d", i+1)
		c.Questions[i].At = len(c.Messages)
	}
	for i := range c.Continuity {
		c.Continuity[i].ID = fmt.Sprintf("c%04d", i+1)
	}
	return c, nil
}

// dayLabel is how a turn names a day: "Saturday, 8 March".
func dayLabel(t time.Time) string { return t.Format("Monday, 2 January") }

// dateForms are the strings that show a day in a context.
func dateForms(t time.Time) []string {
	return []string{t.Format(time.DateOnly), dayLabel(t)}
}

// longDate is a day in an answer: "8 March 2025".
func longDate(t time.Time) string { return t.Format("2 January 2006") }

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x243f6a8885a308d3)) }
