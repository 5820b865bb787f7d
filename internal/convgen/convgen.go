package convgen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Config shapes a generated conversation. The same Config always gives the
// same Conversation.
type Config struct {
	// Seed drives every random choice.
	Seed uint64
	// Sittings is the number of sittings (the user comes back days later).
	Sittings int
	// MessagesPerSitting: a sitting ends at the first exchange boundary at
	// or past this many messages.
	MessagesPerSitting int
	// CheckpointsPerSitting: questions are asked this many times per sitting,
	// at even intervals, the last one at the end of the sitting.
	CheckpointsPerSitting int
	// QuestionsPerCheckpoint: facts asked about at a checkpoint (a uniform
	// sample of the facts mentioned so far). The final checkpoint, at the end
	// of the conversation, asks about every fact.
	QuestionsPerCheckpoint int
	// StartUnixNano is the day of the first sitting (it starts at 09:xx).
	StartUnixNano int64
}

// DefaultConfig is the conversation of `make bench-memory`: 6 sittings of
// about 300 messages (some 1,800 messages, 90k tokens).
func DefaultConfig() Config {
	return Config{
		Seed:                   1,
		Sittings:               6,
		MessagesPerSitting:     300,
		CheckpointsPerSitting:  2,
		QuestionsPerCheckpoint: 12,
		StartUnixNano:          1_740_960_000_000_000_000, // Monday 2025-03-03 00:00 UTC
	}
}

// ErrConfig is returned (wrapped) by Validate and Generate for an invalid
// Config.
var ErrConfig = errors.New("convgen: invalid config")

// Validate checks the Config.
func (c Config) Validate() error {
	switch {
	case c.Sittings < 1:
		return fmt.Errorf("%w: Sittings must be >= 1, got %d", ErrConfig, c.Sittings)
	case c.MessagesPerSitting < 20:
		return fmt.Errorf("%w: MessagesPerSitting must be >= 20, got %d", ErrConfig, c.MessagesPerSitting)
	case c.CheckpointsPerSitting < 1:
		return fmt.Errorf("%w: CheckpointsPerSitting must be >= 1, got %d", ErrConfig, c.CheckpointsPerSitting)
	case c.QuestionsPerCheckpoint < 0:
		return fmt.Errorf("%w: QuestionsPerCheckpoint must be >= 0, got %d", ErrConfig, c.QuestionsPerCheckpoint)
	}
	return nil
}

// Kind classifies a planted fact.
type Kind string

// Fact kinds. KindTool marks facts that arrive in a tool result.
const (
	KindName       Kind = "name"
	KindNumber     Kind = "number"
	KindDate       Kind = "date"
	KindID         Kind = "id"
	KindDecision   Kind = "decision"
	KindCommitment Kind = "commitment"
	KindTool       Kind = "tool"
)

// How says how a message mentions a fact's value.
type How string

// Mention kinds.
const (
	Planted    How = "planted"     // first statement
	Corrected  How = "corrected"   // a new value supersedes the old one
	Restated   How = "restated"    // the same value said again (user or tool)
	Echoed     How = "echoed"      // the assistant repeats a value it was just told
	Recalled   How = "recalled"    // the assistant answers a "what was X again?"
	ToolResult How = "tool_result" // a tool result carries the value
)

// Message is one conversation message. Index is its position in
// Conversation.Messages (the "turn" questions point to).
type Message struct {
	Index      int
	Sitting    int
	Role       memoryv1.Role
	Content    string
	ToolCalls  []*memoryv1.ToolCall
	ToolCallID string
	// UnixNano is when the message was said: Input sets it as
	// said_unix_nano, and a driver appends at this time too; the first user
	// message of each sitting also carries the date in its text.
	UnixNano int64
}

// ID is the message id used for every append: "t" + the zero-padded index.
func (m *Message) ID() string { return MessageID(m.Index) }

// MessageID returns the id of message index i.
func MessageID(i int) string { return fmt.Sprintf("t%05d", i) }

// ParseMessageID returns the index of a MessageID, or -1.
func ParseMessageID(id string) int {
	var i int
	if len(id) < 2 || id[0] != 't' {
		return -1
	}
	if _, err := fmt.Sscanf(id[1:], "%d", &i); err != nil || MessageID(i) != id {
		return -1
	}
	return i
}

// Input returns the message as an append request message, said at
// UnixNano.
func (m *Message) Input() *memoryv1.MessageInput {
	in := &memoryv1.MessageInput{Id: m.ID(), Role: m.Role, Content: m.Content, ToolCallId: m.ToolCallID, SaidUnixNano: m.UnixNano}
	for _, c := range m.ToolCalls {
		in.ToolCalls = append(in.ToolCalls, &memoryv1.ToolCall{Id: c.Id, Name: c.Name, Arguments: c.Arguments})
	}
	return in
}

// Text is everything of the message a context shows: the content, then each
// tool call's name and arguments.
func (m *Message) Text() string {
	if len(m.ToolCalls) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		b.WriteString("\n")
		b.WriteString(c.Name)
		b.WriteString(c.Arguments)
	}
	return b.String()
}

// Span is a half-open range [Start, End) of message indexes.
type Span struct{ Start, End int }

// Sitting is one session of the conversation; sittings are days apart.
type Sitting struct {
	Span
	UnixNano int64
	Label    string // e.g. "Monday 3 March 2025, 09:14"
}

// Mention is one message holding a fact's value.
type Mention struct {
	Turn  int
	Value string
	How   How
}

// Fact is a planted fact and every message that states its value, in
// conversation order. A Corrected mention changes the value from then on.
type Fact struct {
	ID       string // e.g. "orion/budget"
	Kind     Kind
	Topic    string
	Question string
	Mentions []Mention
}

// At returns the fact's value after messages[:at], the latest turn before
// at holding that value, and the earlier values it superseded (oldest first).
func (f *Fact) At(at int) (value string, turn int, superseded []string, ok bool) {
	turn = -1
	for _, m := range f.Mentions {
		if m.Turn >= at {
			break
		}
		if m.Value != value {
			if value != "" {
				superseded = append(superseded, value)
			}
			value = m.Value
		}
		turn, ok = m.Turn, true
	}
	return value, turn, superseded, ok
}

// Checkpoint is a point where questions are asked: after Messages[:At].
// At is always the end of an append and of an exchange.
type Checkpoint struct {
	At      int
	Sitting int
	Final   bool
}

// Question asks about a fact at a checkpoint.
type Question struct {
	ID         string // "q0001"
	Checkpoint int    // index in Conversation.Checkpoints
	At         int    // asked after Messages[:At]
	Final      bool   // asked at the end of the conversation
	Fact       string
	Kind       Kind
	Text       string
	// Answers are the accepted answer strings (any one suffices).
	Answers []string
	// AnswerTurn is the latest message before At holding the answer.
	AnswerTurn int
	// Superseded are the fact's earlier values (a correction replaced them).
	Superseded []string
}

// Conversation is a generated conversation with its facts and questions.
type Conversation struct {
	Config       Config
	SystemPrompt string
	Messages     []Message
	// Appends cut Messages into the append requests of a client: the user
	// message alone, then the assistant's reply with its tool calls and
	// their results.
	Appends     []Span
	Sittings    []Sitting
	Facts       []*Fact
	Checkpoints []Checkpoint
	Questions   []Question
}

// Fact returns the fact with id, or nil.
func (c *Conversation) Fact(id string) *Fact {
	for _, f := range c.Facts {
		if f.ID == id {
			return f
		}
	}
	return nil
}

// Generate returns the conversation of cfg.
func Generate(cfg Config) (*Conversation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := newGen(cfg)
	g.run()
	conv := &Conversation{
		Config:       cfg,
		SystemPrompt: systemPrompt,
		Messages:     g.msgs,
		Appends:      g.appends,
		Sittings:     g.sittings,
		Facts:        g.factList,
		Checkpoints:  g.checkpoints,
	}
	conv.Questions = askQuestions(conv, rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)))
	return conv, nil
}

// askQuestions samples the questions of every checkpoint.
func askQuestions(c *Conversation, rng *rand.Rand) []Question {
	var out []Question
	for ci, cp := range c.Checkpoints {
		var known []*Fact
		for _, f := range c.Facts {
			if _, _, _, ok := f.At(cp.At); ok {
				known = append(known, f)
			}
		}
		pick := known
		if !cp.Final && len(known) > c.Config.QuestionsPerCheckpoint {
			pick = nil
			for _, i := range rng.Perm(len(known))[:c.Config.QuestionsPerCheckpoint] {
				pick = append(pick, known[i])
			}
			// Keep fact order, so the question list reads in planting order.
			sortByFactOrder(pick, c.Facts)
		}
		for _, f := range pick {
			v, turn, sup, _ := f.At(cp.At)
			out = append(out, Question{
				ID: fmt.Sprintf("q%04d", len(out)+1), Checkpoint: ci, At: cp.At, Final: cp.Final,
				Fact: f.ID, Kind: f.Kind, Text: f.Question,
				Answers: []string{v}, AnswerTurn: turn, Superseded: sup,
			})
		}
	}
	return out
}

func sortByFactOrder(fs []*Fact, order []*Fact) {
	pos := make(map[*Fact]int, len(order))
	for i, f := range order {
		pos[f] = i
	}
	slices.SortFunc(fs, func(a, b *Fact) int { return pos[a] - pos[b] })
}
