package convgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// gen builds one conversation. Every random choice comes from rng, and the
// generator never iterates over a map, so a seed gives one conversation.
type gen struct {
	cfg    Config
	rng    *rand.Rand
	values values

	msgs        []Message
	appends     []Span
	open        int // start of the append being built
	sittings    []Sitting
	checkpoints []Checkpoint
	sitting     int
	now         int64
	calls       int // tool call ids given out

	factList []*Fact
	info     map[*Fact]*factInfo

	topics    []*topic // active topics, in activation order
	nextTopic []int    // indexes into topicPool not yet active
	customers []*customer
	freeCust  []int // indexes into customerPool not yet looked up
	personal  personal
}

// factInfo is what the generator needs to talk about a fact again.
type factInfo struct {
	// userStmt and stmt state the fact with value v as the user (a
	// restatement; nil: the user never restates it) and as the assistant
	// (echoes and recalls).
	userStmt, stmt func(v string) string
	// correct returns a correction text from old to new, and next a new
	// value; nil when the fact is never corrected in conversation.
	correct func(old, new string) string
	next    func() string
}

type topic struct {
	def   topicDef
	cat   decisionCat
	slots [numSlots]*Fact
	// issue and deliverable/person of the ticket and commitment slots.
	issue, deliverable, person string
}

type slot int

const (
	slotBudget slot = iota
	slotLead
	slotDeadline
	slotDecision
	slotTicket
	slotCommitment
	numSlots
)

type customer struct {
	name                 string
	tier, region         string
	id, manager, balance *Fact
	openTickets          int
}

type personal struct {
	dog, employee, flight *Fact
	city                  string
}

func newGen(cfg Config) *gen {
	g := &gen{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, 0x5851f42d4c957f2d)),
		now:  cfg.StartUnixNano,
		info: map[*Fact]*factInfo{},
	}
	g.nextTopic = g.rng.Perm(len(topicPool))
	g.freeCust = g.rng.Perm(len(customerPool))
	return g
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func (g *gen) chance(p float64) bool { return g.rng.Float64() < p }

// say adds a message to the append being built and returns its index.
func (g *gen) say(role memoryv1.Role, content string) int {
	g.now += int64(5+g.rng.IntN(85)) * int64(time.Second)
	i := len(g.msgs)
	g.msgs = append(g.msgs, Message{Index: i, Sitting: g.sitting, Role: role, Content: content, UnixNano: g.now})
	return i
}

// user says content as its own append.
func (g *gen) user(content string) int {
	i := g.say(memoryv1.Role_ROLE_USER, content)
	g.flush()
	return i
}

func (g *gen) assistant(content string) int { return g.say(memoryv1.Role_ROLE_ASSISTANT, content) }

// call adds an assistant message calling the tools (name, JSON arguments
// pairs) and returns the call ids.
func (g *gen) call(content string, nameArgs ...string) []string {
	i := g.say(memoryv1.Role_ROLE_ASSISTANT, content)
	var ids []string
	for k := 0; k < len(nameArgs); k += 2 {
		g.calls++
		id := fmt.Sprintf("call_%d", g.calls)
		g.msgs[i].ToolCalls = append(g.msgs[i].ToolCalls, &memoryv1.ToolCall{Id: id, Name: nameArgs[k], Arguments: nameArgs[k+1]})
		ids = append(ids, id)
	}
	return ids
}

// result adds the tool result of call id.
func (g *gen) result(id, content string) int {
	i := g.say(memoryv1.Role_ROLE_TOOL, content)
	g.msgs[i].ToolCallID = id
	return i
}

// flush closes the append being built.
func (g *gen) flush() {
	if len(g.msgs) > g.open {
		g.appends = append(g.appends, Span{g.open, len(g.msgs)})
		g.open = len(g.msgs)
	}
}

// newFact registers a fact planted at turn with value v.
func (g *gen) newFact(id string, kind Kind, topic, question string, turn int, v string, info *factInfo) *Fact {
	f := &Fact{ID: id, Kind: kind, Topic: topic, Question: question}
	g.factList = append(g.factList, f)
	g.info[f] = info
	g.mention(f, turn, v, Planted)
	return f
}

// mention records that message turn holds value v of f. A value different
// from the current one is a correction, whatever how says.
func (g *gen) mention(f *Fact, turn int, v string, how How) {
	if n := len(f.Mentions); n > 0 && f.Mentions[n-1].Value != v {
		how = Corrected
	}
	f.Mentions = append(f.Mentions, Mention{Turn: turn, Value: v, How: how})
}

// current returns the value of f now.
func current(f *Fact) string { return f.Mentions[len(f.Mentions)-1].Value }

func (g *gen) run() {
	for s := range g.cfg.Sittings {
		g.sitting = s
		g.startSitting()
		start := len(g.msgs)
		per := g.cfg.MessagesPerSitting
		nextCP := 1
		for len(g.msgs)-start < per-2 {
			g.episode()
			g.flush()
			if nextCP < g.cfg.CheckpointsPerSitting && len(g.msgs)-start >= nextCP*per/g.cfg.CheckpointsPerSitting {
				g.checkpoints = append(g.checkpoints, Checkpoint{At: len(g.msgs), Sitting: s})
				nextCP++
			}
		}
		g.user(pick(g.rng, closerUser))
		g.assistant(pick(g.rng, closerAssistant))
		g.flush()
		g.sittings[s].End = len(g.msgs)
		g.checkpoints = append(g.checkpoints, Checkpoint{At: len(g.msgs), Sitting: s, Final: s == g.cfg.Sittings-1})
	}
}

// startSitting moves the clock 1 to 9 days ahead to a working hour, opens
// the sitting with the date in the first user message and activates a
// topic (two at the start).
func (g *gen) startSitting() {
	if g.sitting > 0 {
		// Midnight (UTC) of a day 1 to 9 days later, then 08:00 to 16:59.
		day := int64(24 * time.Hour)
		g.now = (g.now/day+int64(1+g.rng.IntN(9)))*day + int64(8+g.rng.IntN(9))*int64(time.Hour) + int64(g.rng.IntN(60))*int64(time.Minute)
	} else {
		g.now += int64(9*time.Hour) + int64(g.rng.IntN(60))*int64(time.Minute)
	}
	label := time.Unix(0, g.now).UTC().Format("Monday 2 January 2006, 15:04")
	g.sittings = append(g.sittings, Sitting{Span: Span{Start: len(g.msgs)}, UnixNano: g.now, Label: label})
	g.user(fmt.Sprintf(pick(g.rng, openerUser), label))
	g.assistant(pick(g.rng, openerAssistant))
	g.flush()
	g.activateTopic()
	if g.sitting == 0 {
		g.activateTopic()
	}
}

func (g *gen) activateTopic() bool {
	if len(g.nextTopic) == 0 {
		return false
	}
	def := topicPool[g.nextTopic[0]]
	g.nextTopic = g.nextTopic[1:]
	// A decision category with options left for a plant and corrections.
	var cats []decisionCat
	for _, c := range decisionCats {
		free := 0
		for _, o := range c.options {
			if !g.values.conflicts(o) {
				free++
			}
		}
		if free >= 4 {
			cats = append(cats, c)
		}
	}
	if len(cats) == 0 {
		cats = decisionCats
	}
	g.topics = append(g.topics, &topic{
		def:         def,
		cat:         pick(g.rng, cats),
		issue:       pick(g.rng, ticketIssues),
		deliverable: pick(g.rng, deliverables),
	})
	return true
}

// episode adds one exchange (a user message, then the assistant's reply
// with its tool calls), chosen at random among the kinds below.
func (g *gen) episode() {
	type kind struct {
		w  int
		fn func() bool // false: not possible now, pick again
	}
	kinds := []kind{
		{20, g.chitchat},
		{14, g.explain},
		{10, g.status},
		{13, g.plantProject},
		{5, g.correct},
		{5, g.lookupCustomer},
		{3, g.queryOrders},
		{6, g.fillerTool},
		{3, g.recall},
		{2, g.restate},
		{2, g.plantPersonal},
	}
	total := 0
	for _, k := range kinds {
		total += k.w
	}
	for {
		r := g.rng.IntN(total)
		for _, k := range kinds {
			if r < k.w {
				if k.fn() {
					return
				}
				break
			}
			r -= k.w
		}
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
