package segmented

import (
	"fmt"
	"math/rand/v2"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// A generator of varied conversation text with planted key facts, for the
// summarizer's retention and compression figures and the long-conversation
// tests. Every fact carries keys: strings that must survive in a summary
// for the fact to count as kept. Filler is what conversations are mostly
// made of: greetings, acknowledgements, explanations and hedges without a
// key fact, and long sentences that bury a fact in one clause.

var (
	corpusNames  = []string{"Alice", "Priya", "Marcus", "Chen", "Olga", "Tomás", "Fatima", "Kenji", "Ines", "Bob"}
	corpusTeams  = []string{"Payments", "Platform", "Growth", "Data", "Security", "Mobile"}
	corpusMonths = []string{"January", "February", "March", "April", "June", "July", "September", "October", "November"}
	corpusDays   = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
	corpusTech   = []string{"PostgreSQL", "Kafka", "Redis", "Snowflake", "Terraform", "Kubernetes", "BigQuery"}
	corpusTools  = []string{"sql", "lookup_order", "search_tickets", "get_invoice", "deploy_status"}
	corpusFiller = []string{
		"Hi there!",
		"Thanks so much, that is really helpful.",
		"Sounds good to me.",
		"Great, thank you!",
		"Let me walk you through how I usually approach this kind of thing.",
		"There are a few ways to think about it, and each of them has its own trade-offs.",
		"It is generally a good idea to keep things simple where possible.",
		"I hope that makes sense so far.",
		"That is a fair point and worth keeping in mind.",
		"In my experience these things tend to take a little longer than people expect.",
		"Happy to help with that.",
		"Let me know if anything else comes up.",
		"We can always revisit the details later on if needed.",
		"Good question, it depends a bit on the context.",
		"The usual caveats apply here, as always.",
		"Okay, I see what you mean.",
		"No worries at all.",
		"This part is mostly background, so feel free to skim it.",
		"One more general remark before we go on.",
		"I was thinking about the bigger picture while reading through this.",
	}
	corpusBury = []string{
		"Well, after going back and forth with the team for quite a while and weighing all of the options we had on the table, %s",
		"Honestly, and I know this has been discussed in a lot of meetings already without much of a result, %s",
		"So, to make a long story short, and without repeating everything that was said in the thread, %s",
	}
)

// fact is one planted key fact: its sentence and the keys that must survive.
type fact struct {
	text string
	keys []string
	tool *memoryv1.MessageInput // a tool result carrying the fact, when set
	call *memoryv1.ToolCall
}

type corpus struct {
	rnd    *rand.Rand
	nextID int
}

func newCorpus(seed uint64) *corpus { return &corpus{rnd: rand.New(rand.NewPCG(seed, 7))} }

func (c *corpus) pick(xs []string) string { return xs[c.rnd.IntN(len(xs))] }

func (c *corpus) id(prefix string) string {
	c.nextID++
	return fmt.Sprintf("%s-%d", prefix, 1000+c.nextID*37%9000)
}

// fact returns a random key fact.
func (c *corpus) fact() fact {
	switch c.rnd.IntN(9) {
	case 0:
		id := c.id("BILL")
		tech := c.pick(corpusTech)
		return fact{text: fmt.Sprintf("we decided to move the billing jobs to %s under ticket %s.", tech, id), keys: []string{id, tech}}
	case 1:
		name, day := c.pick(corpusNames), c.pick(corpusDays)
		return fact{text: fmt.Sprintf("I'll send the revised contract to %s by %s.", name, day), keys: []string{name, day}}
	case 2:
		id := c.id("ORD")
		return fact{text: fmt.Sprintf("Can you check whether order %s has shipped yet?", id), keys: []string{id}}
	case 3:
		amount, n := fmt.Sprintf("%d.%02d", 100+c.rnd.IntN(9000), c.rnd.IntN(100)), fmt.Sprint(10+c.rnd.IntN(990))
		return fact{text: fmt.Sprintf("The quote came to %s EUR for %s units.", amount, n), keys: []string{amount, n}}
	case 4:
		date := fmt.Sprintf("%s %d", c.pick(corpusMonths), 1+c.rnd.IntN(28))
		return fact{text: fmt.Sprintf("The launch moved to %s.", date), keys: []string{date}}
	case 5:
		name, team := c.pick(corpusNames), c.pick(corpusTeams)
		return fact{text: fmt.Sprintf("%s from the %s team owns the rollout.", name, team), keys: []string{name, team}}
	case 6:
		id, n := c.id("ORD"), fmt.Sprint(1+c.rnd.IntN(500))
		call := &memoryv1.ToolCall{Id: c.id("call"), Name: c.pick(corpusTools), Arguments: fmt.Sprintf(`{"order":"%s"}`, id)}
		state := c.pick([]string{"shipped", "delayed", "cancelled", "refunded"})
		return fact{
			keys: []string{id, n, state},
			call: call,
			tool: &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: call.Id, Content: fmt.Sprintf("status: ok\norder %s: %s\nitems: %s\nwarehouse notes: none", id, state, n)},
		}
	case 7:
		pct := fmt.Sprintf("%d%%", 5+c.rnd.IntN(60))
		return fact{text: fmt.Sprintf("Churn in the trial cohort dropped by %s after the change.", pct), keys: []string{pct}}
	default:
		id := c.id("INC")
		name := c.pick(corpusNames)
		return fact{text: fmt.Sprintf("%s agreed to close incident %s once the hotfix is verified.", name, id), keys: []string{name, id}}
	}
}

// density describes the generated text: planted facts and filler
// sentences per message, by role (twice up to the given filler count), and
// noise rows in tool results.
type density struct {
	userFacts, asstFacts   float64
	userFiller, asstFiller int
	toolNoise              int
}

var (
	// chatty: few facts in a lot of talk.
	chatty = density{userFacts: 0.5, asstFacts: 0.5, userFiller: 8, asstFiller: 8}
	// conversational: short user messages with a fact or question, long
	// assistant replies with one or two facts, tool results with a few
	// rows of noise around the outcome.
	conversational = density{userFacts: 1, asstFacts: 1.5, userFiller: 1, asstFiller: 10, toolNoise: 3}
	// factDense: fact after fact, hardly any filler.
	factDense = density{userFacts: 2, asstFacts: 2, userFiller: 1, asstFiller: 1}
)

func (c *corpus) count(f float64) int {
	n := int(f)
	if c.rnd.Float64() < f-float64(n) {
		n++
	}
	return n
}

// messages returns n messages or a few more (user and assistant
// alternating, tool calls and their results after the message that plants
// them) of density d, and the keys planted.
func (c *corpus) messages(n int, d density) ([]*memoryv1.MessageInput, [][]string) {
	var out []*memoryv1.MessageInput
	var keys [][]string
	for i := 0; len(out) < n; i++ {
		role, facts, filler := memoryv1.Role_ROLE_USER, d.userFacts, d.userFiller
		if i%2 == 1 {
			role, facts, filler = memoryv1.Role_ROLE_ASSISTANT, d.asstFacts, d.asstFiller
		}
		var parts []string
		for range c.rnd.IntN(filler + 1) {
			parts = append(parts, c.pick(corpusFiller))
		}
		var tail []*memoryv1.MessageInput
		var calls []*memoryv1.ToolCall
		for range c.count(facts) {
			f := c.fact()
			keys = append(keys, f.keys)
			if f.tool != nil {
				for range d.toolNoise {
					f.tool.Content += fmt.Sprintf("\nrow %d: sku=%s qty=%d", c.rnd.IntN(900), c.id("SKU"), 1+c.rnd.IntN(9))
				}
				calls = append(calls, f.call)
				tail = append(tail, f.tool)
				continue
			}
			text := f.text
			if c.rnd.IntN(4) == 0 {
				text = fmt.Sprintf(c.pick(corpusBury), text)
			} else {
				text = strings.ToUpper(text[:1]) + text[1:]
			}
			parts = append(parts, text)
		}
		for range c.rnd.IntN(filler + 1) {
			parts = append(parts, c.pick(corpusFiller))
		}
		if len(parts) == 0 {
			parts = append(parts, c.pick(corpusFiller))
		}
		c.rnd.Shuffle(len(parts), func(a, b int) { parts[a], parts[b] = parts[b], parts[a] })
		out = append(out, &memoryv1.MessageInput{Role: role, Content: strings.Join(parts, " ")})
		if len(calls) > 0 {
			out = append(out, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: calls})
			out = append(out, tail...)
		}
	}
	return out, keys
}
