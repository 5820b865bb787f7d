package membench

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/convgen"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Memory builds the context an agent sends to its LLM from the conversation
// so far. The benchmark appends the conversation to every Memory, one append
// request at a time, and asks for the context at each checkpoint, once per
// question.
//
// Context receives the question: agentmem with recall on (the context
// assembler) recalls for it, as it would when the user asks
// it; the metric code is the same for every Memory.
type Memory interface {
	Name() string
	// Append adds one append request's messages.
	Append(msgs []convgen.Message) error
	// Context returns the context sent to the LLM if q were asked now.
	Context(q *convgen.Question) (Context, error)
}

// Context is a context as sent, with its make-up in tokens.
type Context struct {
	// Text is every content, tool call name and arguments of the context,
	// one message per line: what the answer strings are looked for in.
	Text string
	// Used is the context's tokens (the budget counts it).
	Used int
	// Verbatim is the tokens of conversation messages sent as they were said
	// (VerbatimMessages of them); Summaries of summaries (in place in L1 and
	// in L2); Other of the ROM and Kernel (system prompt, tool result
	// references, facts).
	Verbatim, Summaries, Other int
	VerbatimMessages           int
	// AnswerVerbatim (set when a question was asked): the question's answer
	// turn is among the messages the memory keeps verbatim.
	AnswerVerbatim bool
}

// messageTokens counts like the session model: content (with its day mark
// when the model stores one after prev: segmented.StoresDay), tool call
// names and arguments, plus
// segmented.MessageOverheadTokens (membench_test checks the counts against
// the model's). The baselines pay for the day as the model does.
func messageTokens(tok segmented.Tokenizer, m, prev *convgen.Message) int {
	content := m.Content
	if segmented.StoresDay(prev.UnixNano, prev.Content, m.UnixNano) {
		content = segmented.DayMark(m.UnixNano) + content
	}
	n := tok.Count(content) + segmented.MessageOverheadTokens
	for _, c := range m.ToolCalls {
		n += tok.Count(c.Name) + tok.Count(c.Arguments)
	}
	return n
}

// before is the message before msgs[i] (none: a zero message).
func before(msgs []convgen.Message, i int) *convgen.Message {
	if i == 0 {
		return &convgen.Message{}
	}
	return &msgs[i-1]
}

func textTokens(tok segmented.Tokenizer, s string) int {
	return tok.Count(s) + segmented.MessageOverheadTokens
}

// agentmemMemory drives the pure session model in process, as the session
// actor does: DecideAppend, then Apply the events (without the log).
type agentmemMemory struct {
	name    string
	st      *segmented.State
	env     segmented.Env
	profile string
	budget  int

	ctx      Context
	ctxValid bool

	// Rejected counts appends the model refused (413: the budget cannot
	// hold them even after compression); their messages never enter it.
	rejected int
	// summaries made during the run (L1Summarized, L1Evicted).
	summaries []*memoryv1.Summary
	// appendLat, contextLat: DecideAppend+Apply, and the first Context()
	// after it (not cached), per append. With recall, appendLat includes
	// the candidate search of an append holding a user message.
	appendLat, contextLat []time.Duration

	// recall (nil: the context assembler is off) finds the candidates of
	// the recalled section, as the node's swap search does; byIndex maps a
	// conversation message to the message as the session stored it.
	recall  Searcher
	byIndex map[int]*memoryv1.Message
	// bySeq holds the messages the session stored, by seq: the node's
	// projection, where its context's own recalled messages are read
	// (hydrate).
	bySeq map[uint64]*memoryv1.Message
	// lastHits are the message indexes the last candidates call found, best
	// first (nil when it did not search): the question mode's "where the
	// evidence went" reads them.
	lastHits []int
	// created: the session's creation events; archive (nil: off) mirrors
	// its log to offer its archived summaries (archived.go).
	created []proto.Message
	archive *archiveMirror
}

var _ Memory = (*agentmemMemory)(nil)

// reservedOutput is the reserved_output_tokens of benchmark sessions:
// max_context_tokens is the budget plus this, so the budget
// (max_context − reserved) is exactly the one asked for.
const reservedOutput = 512

// newAgentmem returns the session model with profile; recall non-nil turns
// the context assembler on (the default of a new session) with recall
// searching it, nil turns it off.
func newAgentmem(conv *convgen.Conversation, tok segmented.Tokenizer, budget int, profile string, recall Searcher) (*agentmemMemory, error) {
	return newAgentmemWith(conv, tok, budget, profile, recall, nil)
}

// newAgentmemWith is newAgentmem with recall and the assembly config with
// (nil: the defaults).
func newAgentmemWith(conv *convgen.Conversation, tok segmented.Tokenizer, budget int, profile string, recall Searcher, with *memoryv1.AssemblyConfig) (*agentmemMemory, error) {
	m := &agentmemMemory{
		name: fmt.Sprintf("agentmem (%s, recall off)", profile), st: segmented.New(), profile: profile, budget: budget,
		env:    segmented.Env{NowUnixNano: conv.Config.StartUnixNano, Tokenizer: tok},
		recall: recall, byIndex: map[int]*memoryv1.Message{}, bySeq: map[uint64]*memoryv1.Message{},
	}
	assembly := &memoryv1.AssemblyConfig{} // off
	if recall != nil {
		m.name, assembly = fmt.Sprintf("agentmem (%s + recall)", profile), with // nil: the defaults
	}
	evs, err := m.st.DecideCreate(&memoryv1.CreateSessionRequest{
		SystemPrompt:         conv.SystemPrompt,
		Profile:              profile,
		MaxContextTokens:     uint32(budget + reservedOutput),
		ReservedOutputTokens: reservedOutput,
		Assembly:             assembly,
	}, "membench", m.env)
	if err != nil {
		return nil, fmt.Errorf("membench: create session (budget %d, %s): %w", budget, profile, err)
	}
	if err := m.apply(evs); err != nil {
		return nil, err
	}
	m.created = evs
	return m, nil
}

func (m *agentmemMemory) Name() string { return m.name }

func (m *agentmemMemory) apply(evs []proto.Message) error {
	v := m.st.Version() + 1
	cmd := fmt.Sprintf("c%d", v)
	if err := m.st.Apply(segmented.Meta{CommandID: cmd, Version: v, Seq: v, TimeUnixNano: m.env.NowUnixNano}, evs); err != nil {
		return err
	}
	if m.archive != nil {
		return m.archive.record(cmd, v, m.env.NowUnixNano, evs)
	}
	return nil
}

func (m *agentmemMemory) Append(msgs []convgen.Message) error {
	req := &memoryv1.AppendRequest{CommandId: fmt.Sprintf("a%d", msgs[0].Index)}
	for i := range msgs {
		req.Messages = append(req.Messages, msgs[i].Input())
	}
	m.env.NowUnixNano = msgs[0].UnixNano
	if f, ok := m.recall.(interface{ Flush() error }); ok {
		// The projector's work, not the append's: the node's projector
		// applies batches as they are stored.
		if err := f.Flush(); err != nil {
			return err
		}
	}
	start := time.Now()
	c, err := m.candidates(req)
	if err != nil {
		return err
	}
	evs, err := m.st.DecideAppendWith(req, c, m.env)
	var rej *segmented.Rejection
	if errors.As(err, &rej) && rej.Code == segmented.CodeTooLarge {
		m.rejected++
		return nil
	}
	if err != nil {
		return fmt.Errorf("membench: %s, budget %d: append of message %d: %w", m.name, m.budget, msgs[0].Index, err)
	}
	if err := m.apply(evs); err != nil {
		return fmt.Errorf("membench: %s: apply: %w", m.name, err)
	}
	mid := time.Now()
	m.st.Context() // built once per version: this is the uncached cost
	end := time.Now()
	m.appendLat = append(m.appendLat, mid.Sub(start))
	m.contextLat = append(m.contextLat, end.Sub(mid))
	m.ctxValid = false
	for _, ev := range evs {
		switch ev := ev.(type) {
		case *memoryv1.MessagesAppended:
			for i, sm := range ev.GetMessages() {
				m.byIndex[msgs[i].Index] = sm
				m.bySeq[sm.GetSeq()] = sm
			}
		case *memoryv1.L1Summarized:
			m.summaries = append(m.summaries, ev.GetSummary())
		case *memoryv1.L1Evicted:
			m.summaries = append(m.summaries, ev.GetSummary())
		}
	}
	return nil
}

// Context renders the model's context. With recall on and a question, it
// is the context after the question is appended (on a copy of the
// session): the assembler recalls for it; otherwise the question does not
// change it.
func (m *agentmemMemory) Context(q *convgen.Question) (Context, error) {
	if q != nil {
		c, err := m.contextFor(q)
		if err == nil {
			c.AnswerVerbatim = m.verbatim(q.AnswerTurn)
		}
		return c, err
	}
	if m.ctxValid {
		return m.ctx, nil
	}
	c, err := m.render(m.st.Context())
	if err != nil {
		return Context{}, err
	}
	m.ctx, m.ctxValid = c, true
	return c, nil
}

func (m *agentmemMemory) contextFor(q *convgen.Question) (Context, error) {
	if m.recall == nil {
		return m.Context(nil)
	}
	req := &memoryv1.AppendRequest{CommandId: "q-" + q.ID, Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_USER, Content: q.Text}}}
	c, err := m.candidates(req)
	if err != nil {
		return Context{}, err
	}
	st := m.st.Clone()
	evs, err := st.DecideAppendWith(req, c, m.env)
	if err != nil {
		return Context{}, fmt.Errorf("membench: %s: question %s: %w", m.name, q.ID, err)
	}
	v := st.Version() + 1
	if err := st.Apply(segmented.Meta{CommandID: req.CommandId, Version: v, Seq: v, TimeUnixNano: m.env.NowUnixNano}, evs); err != nil {
		return Context{}, err
	}
	return m.render(st.Context())
}

// candidates searches the conversation so far for req's latest user
// message (nil without recall or without a user message).
func (m *agentmemMemory) candidates(req *memoryv1.AppendRequest) (*segmented.Candidates, error) {
	m.lastHits = nil
	if m.recall == nil || !m.st.WantsCandidates(req) {
		return nil, nil
	}
	var q string
	for _, in := range req.GetMessages() {
		if in.GetRole() == memoryv1.Role_ROLE_USER {
			q = in.GetContent()
		}
	}
	var hits []int
	var scores []float64
	var err error
	if ss, ok := m.recall.(scoredSearcher); ok {
		hits, scores, err = ss.SearchScored(q, segmented.RecallSearched)
	} else {
		hits, err = m.recall.Search(q, segmented.RecallSearched)
	}
	if err != nil {
		return nil, err
	}
	// The messages the session stored for the hits, offered as the node
	// offers them (segmented.OfferRecall).
	var msgs []*memoryv1.Message
	var msgScores []float64
	index := map[*memoryv1.Message]int{}
	for k, i := range hits {
		if sm, ok := m.byIndex[i]; ok {
			msgs = append(msgs, sm)
			index[sm] = i
			if scores != nil {
				msgScores = append(msgScores, scores[k])
			}
		}
	}
	c := &segmented.Candidates{}
	c.Recall, c.RecallScores = segmented.OfferRecall(msgs, msgScores)
	if k, _ := m.st.CandidateKey(); k.Summaries && m.archive != nil {
		if c.Summaries, c.SummaryScores, err = m.archive.search(q, segmented.SummariesSearched); err != nil {
			return nil, err
		}
	}
	m.lastHits = nil
	for _, sm := range c.Recall {
		m.lastHits = append(m.lastHits, index[sm])
	}
	return c, nil
}

// scoredSearcher is a Searcher that also returns the hits' scores (the
// node hands them to the session with the hits).
type scoredSearcher interface {
	SearchScored(query string, k int) ([]int, []float64, error)
}

// verbatim reports whether conversation message i is verbatim in L1 or
// promoted (read from the cached context, not a clone of the state).
func (m *agentmemMemory) verbatim(i int) bool {
	sm, ok := m.byIndex[i]
	if !ok {
		return false
	}
	for _, cm := range m.st.Context().GetMessages() {
		if (cm.GetLayer() == segmented.LayerL1 || cm.GetLayer() == segmented.LayerPromoted) && cm.GetId() == sm.GetId() {
			return true
		}
	}
	return false
}

// render measures a context reply.
func (m *agentmemMemory) render(reply *memoryv1.ContextReply) (Context, error) {
	reply = m.hydrate(reply)
	var c Context
	var b strings.Builder
	for _, cm := range reply.GetMessages() {
		b.WriteString(cm.GetContent())
		for _, tc := range cm.GetToolCalls() {
			b.WriteString("\n")
			b.WriteString(tc.GetName())
			b.WriteString(tc.GetArguments())
		}
		b.WriteString("\n")
		n := int(cm.GetTokens())
		c.Used += n
		switch {
		case cm.GetLayer() == segmented.LayerL2 || (cm.GetLayer() == segmented.LayerL1 && cm.GetRole() == memoryv1.Role_ROLE_SYSTEM):
			c.Summaries += n
		case cm.GetLayer() == segmented.LayerL1 || cm.GetLayer() == segmented.LayerPromoted || cm.GetLayer() == segmented.LayerRecalled:
			c.Verbatim += n
			c.VerbatimMessages++
		default:
			c.Other += n
		}
	}
	c.Text = b.String()
	if c.Used != int(reply.GetUsage().GetUsed()) {
		return Context{}, fmt.Errorf("membench: %s: context messages hold %d tokens, usage says %d", m.name, c.Used, reply.GetUsage().GetUsed())
	}
	return c, nil
}

// windowMemory is the baseline: the system prompt and the most recent
// messages that fit the same budget, counted with the same tokenizer and
// the same per-message overhead. Tool results whose call fell out of the
// window are dropped too (a chat API refuses them).
type windowMemory struct {
	budget int
	rom    int // tokens of the system prompt
	prompt string
	msgs   []convgen.Message
	tokens []int
	tok    segmented.Tokenizer

	ctx      Context
	ctxValid bool
	// start: the first message index in the window.
	start int
}

var _ Memory = (*windowMemory)(nil)

func newWindow(conv *convgen.Conversation, tok segmented.Tokenizer, budget int) *windowMemory {
	return &windowMemory{budget: budget, prompt: conv.SystemPrompt, rom: textTokens(tok, conv.SystemPrompt), tok: tok}
}

func (w *windowMemory) Name() string { return "sliding window" }

func (w *windowMemory) Append(msgs []convgen.Message) error {
	for i := range msgs {
		w.msgs = append(w.msgs, msgs[i])
		w.tokens = append(w.tokens, messageTokens(w.tok, &msgs[i], before(w.msgs, len(w.msgs)-1)))
	}
	w.ctxValid = false
	return nil
}

func (w *windowMemory) Context(q *convgen.Question) (Context, error) {
	if !w.ctxValid {
		w.ctx, w.ctxValid = w.build(), true
	}
	c := w.ctx
	if q != nil {
		c.AnswerVerbatim = q.AnswerTurn >= w.start
	}
	return c, nil
}

func (w *windowMemory) build() Context {
	free := w.budget - w.rom
	start := len(w.msgs)
	for start > 0 && w.tokens[start-1] <= free {
		free -= w.tokens[start-1]
		start--
	}
	w.start = start
	calls := map[string]bool{}
	c := Context{Used: w.rom, Other: w.rom}
	var b strings.Builder
	b.WriteString(w.prompt)
	b.WriteString("\n")
	for i := start; i < len(w.msgs); i++ {
		m := &w.msgs[i]
		if m.Role == memoryv1.Role_ROLE_TOOL && !calls[m.ToolCallID] {
			continue // its call is outside the window
		}
		for _, tc := range m.ToolCalls {
			calls[tc.Id] = true
		}
		b.WriteString(m.Text())
		b.WriteString("\n")
		c.Used += w.tokens[i]
		c.Verbatim += w.tokens[i]
		c.VerbatimMessages++
	}
	c.Text = b.String()
	return c
}
