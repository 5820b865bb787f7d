package convgen

import (
	"fmt"
	"strings"
)

// Each episode adds one exchange and returns false when it cannot happen
// now (nothing to correct yet, pools used up), so another one is picked.

// fill replaces the placeholders of a template: {T} topic, {V} value,
// {O} old value, {cat} decision category, {P} person, {issue}, {deliv}.
func fill(tmpl string, kv ...string) string {
	return strings.NewReplacer(kv...).Replace(tmpl)
}

type slotSpec struct {
	id, question string
	kind         Kind
	plants       []string // user statements planting {V}
	stmt         string   // the fact stated plainly with {V}
	corrects     []string // user corrections from {O} to {V}; nil: never corrected
}

var slotSpecs = [numSlots]slotSpec{
	slotBudget: {
		id: "budget", kind: KindNumber, question: "What is the budget for the {T}?",
		plants: []string{"The budget for the {T} is {V}.", "Finance approved {V} as the budget for the {T}.", "We have {V} to spend on the {T} this year."},
		stmt:   "The budget for the {T} is {V}.",
		corrects: []string{"Actually, the budget for the {T} is {V}, not {O}.", "Correction on the {T}: finance revised the budget from {O} to {V}.",
			"Scratch what I said about the {T} budget earlier. It is {V} now."},
	},
	slotLead: {
		id: "lead", kind: KindName, question: "Who leads the {T}?",
		plants:   []string{"{V} is leading the {T}.", "The {T} lead is {V}.", "{V} will own the {T} from now on."},
		stmt:     "The {T} is led by {V}.",
		corrects: []string{"Change of plan: {V} is taking over the {T} from {O}.", "Actually, the {T} lead is now {V}; {O} moved to another team."},
	},
	slotDeadline: {
		id: "deadline", kind: KindDate, question: "What is the deadline for the {T}?",
		plants:   []string{"The {T} has to be done by {V}.", "Our deadline for the {T} is {V}."},
		stmt:     "The deadline for the {T} is {V}.",
		corrects: []string{"The {T} deadline slipped to {V} (it was {O}).", "Update: we moved the {T} deadline to {V}."},
	},
	slotDecision: {
		id: "decision", kind: KindDecision, question: "Which {cat} did we choose for the {T}?",
		plants:   []string{"We decided to use {V} as the {cat} for the {T}.", "Decision for the {T}: the {cat} will be {V}."},
		stmt:     "For the {T} the {cat} is {V}.",
		corrects: []string{"We changed our mind on the {T}: the {cat} will be {V} instead of {O}.", "After the review we dropped {O}; the {T} goes with {V} as the {cat}."},
	},
	slotTicket: {
		id: "ticket", kind: KindID, question: "What is the ticket id of the {issue} on the {T}?",
		plants: []string{"I filed the {issue} on the {T} as {V}.", "The {issue} in the {T} is tracked as {V}."},
		stmt:   "The {issue} on the {T} is ticket {V}.",
	},
	slotCommitment: {
		id: "commitment", kind: KindCommitment, question: "By what date is {P} supposed to {deliv}?",
		plants:   []string{"{P} committed to {deliv} by {V}.", "{P} promised to {deliv} for the {T} by {V}."},
		stmt:     "{P} committed to {deliv} by {V}.",
		corrects: []string{"{P} now says they will {deliv} by {V}, not {O}.", "Heads-up: {P} needs more time and will {deliv} by {V}."},
	},
}

func (g *gen) plantProject() bool {
	type cand struct {
		t *topic
		s slot
	}
	var cands []cand
	for _, t := range g.topics {
		for s := range numSlots {
			if t.slots[s] == nil {
				cands = append(cands, cand{t, s})
			}
		}
	}
	if len(cands) == 0 {
		if !g.activateTopic() {
			return false
		}
		return g.plantProject()
	}
	c := pick(g.rng, cands)
	t, spec := c.t, slotSpecs[c.s]
	var next func() string
	switch c.s {
	case slotBudget:
		next = g.euros
	case slotLead:
		next = g.personName
	case slotDeadline, slotCommitment:
		next = g.isoDate
	case slotDecision:
		next = func() string { return g.option(t.cat.options) }
	case slotTicket:
		next = func() string { return g.code(t.def.code, 4) }
	}
	if c.s == slotCommitment {
		t.person = g.personName()
	}
	v := next()
	if v == "" {
		return false // the category's options are used up
	}
	kv := func(v, old string) []string {
		return []string{"{T}", t.def.name, "{V}", v, "{O}", old, "{cat}", t.cat.name, "{P}", t.person, "{issue}", t.issue, "{deliv}", t.deliverable}
	}
	stmt := func(v string) string { return fill(spec.stmt, kv(v, "")...) }
	info := &factInfo{userStmt: stmt, stmt: stmt, next: next}
	if spec.corrects != nil {
		tmpls := spec.corrects
		info.correct = func(old, v string) string { return fill(pick(g.rng, tmpls), kv(v, old)...) }
	}
	turn := g.user(fill(pick(g.rng, spec.plants), kv(v, "")...))
	f := g.newFact(strings.ToLower(t.def.code)+"/"+spec.id, spec.kind, t.def.name, fill(spec.question, kv("", "")...), turn, v, info)
	t.slots[c.s] = f
	g.ack(f, "Noted: ")
	return true
}

// ack answers a statement: an acknowledgement, or (about a third of the
// time) the assistant repeats the fact.
func (g *gen) ack(f *Fact, prefix string) {
	if g.chance(0.35) {
		v := current(f)
		g.mention(f, g.assistant(prefix+lowerFirst(g.info[f].stmt(v))), v, Echoed)
		return
	}
	g.assistant(pick(g.rng, ackAssistant))
}

func lowerFirst(s string) string {
	// Keep names ("Priya Natarajan is ...") capitalized: lower only "The ".
	if strings.HasPrefix(s, "The ") || strings.HasPrefix(s, "For ") || strings.HasPrefix(s, "Your ") {
		return strings.ToLower(s[:1]) + s[1:]
	}
	return s
}

// correct supersedes a fact's value (user-stated facts; tool facts change
// through a new lookup).
func (g *gen) correct() bool {
	var cands []*Fact
	for _, f := range g.factList {
		if g.info[f].correct != nil {
			cands = append(cands, f)
		}
	}
	if len(cands) == 0 {
		return false
	}
	f := pick(g.rng, cands)
	info := g.info[f]
	old, v := current(f), info.next()
	if v == "" {
		return false
	}
	g.mention(f, g.user(info.correct(old, v)), v, Corrected)
	g.ack(f, "Thanks for the correction. ")
	return true
}

// recall: the user asks about a fact, the assistant answers with its value.
func (g *gen) recall() bool {
	if len(g.factList) == 0 {
		return false
	}
	f := pick(g.rng, g.factList)
	g.user("Remind me: " + f.Question)
	v := current(f)
	g.mention(f, g.assistant(g.info[f].stmt(v)), v, Recalled)
	return true
}

// restate: the user states a known fact again, unchanged.
func (g *gen) restate() bool {
	var cands []*Fact
	for _, f := range g.factList {
		if g.info[f].userStmt != nil {
			cands = append(cands, f)
		}
	}
	if len(cands) == 0 {
		return false
	}
	f := pick(g.rng, cands)
	v := current(f)
	g.mention(f, g.user("For the record: "+g.info[f].userStmt(v)), v, Restated)
	g.assistant(pick(g.rng, ackAssistant))
	return true
}

func (g *gen) plantPersonal() bool {
	p := &g.personal
	var opts []func()
	if p.dog == nil {
		opts = append(opts, func() {
			v := g.option(dogNames)
			turn := g.user(fmt.Sprintf("By the way, my dog is called %s and she keeps chewing my cables.", v))
			p.dog = g.newFact("me/dog", KindName, "personal", "What is my dog's name?", turn, v, &factInfo{
				userStmt: func(v string) string { return "My dog is called " + v + "." },
				stmt:     func(v string) string { return "Your dog is called " + v + "." },
			})
			g.mention(p.dog, g.assistant("Ha, a classic. "+v+" sounds like a character."), v, Echoed)
		})
	}
	if p.employee == nil {
		opts = append(opts, func() {
			v := g.code("EMP", 5)
			turn := g.user(fmt.Sprintf("My employee number is %s, in case a form needs it.", v))
			p.employee = g.newFact("me/employee", KindID, "personal", "What is my employee number?", turn, v, &factInfo{
				userStmt: func(v string) string { return "My employee number is " + v + "." },
				stmt:     func(v string) string { return "Your employee number is " + v + "." },
			})
			g.assistant(pick(g.rng, ackAssistant))
		})
	}
	if p.flight == nil {
		opts = append(opts, func() {
			p.city = pick(g.rng, cities)
			v := g.isoDate()
			turn := g.user(fmt.Sprintf("I'm flying to %s on %s for a conference.", p.city, v))
			city := p.city
			p.flight = g.newFact("me/flight", KindDate, "personal", "When is my flight to "+city+"?", turn, v, &factInfo{
				userStmt: func(v string) string { return "My flight to " + city + " is on " + v + "." },
				stmt:     func(v string) string { return "Your flight to " + city + " is on " + v + "." },
				correct: func(old, v string) string {
					return fmt.Sprintf("My flight to %s got moved to %s (it was %s).", city, v, old)
				},
				next: g.isoDate,
			})
			g.assistant("Nice, " + city + " is a great place for a conference.")
		})
	}
	if len(opts) == 0 {
		return false
	}
	pick(g.rng, opts)()
	return true
}

// lookupCustomer: the assistant calls lookup_customer (for two customers in
// parallel about a third of the time); a later lookup of the same customer
// returns a new open balance and sometimes a new account manager, which
// supersede the old ones.
func (g *gen) lookupCustomer() bool {
	var cs []*customer
	again := len(g.customers) > 0 && (len(g.freeCust) == 0 || g.chance(0.25))
	n := 1
	if g.chance(0.3) {
		n = 2
	}
	for range n {
		if again {
			c := pick(g.rng, g.customers)
			if len(cs) == 0 || cs[0] != c {
				cs = append(cs, c)
			}
			continue
		}
		if len(g.freeCust) == 0 {
			break
		}
		c := &customer{name: customerPool[g.freeCust[0]], tier: pick(g.rng, tiers), region: pick(g.rng, regions)}
		g.freeCust = g.freeCust[1:]
		g.customers = append(g.customers, c)
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return false
	}
	switch {
	case again:
		g.user(fmt.Sprintf("Can you check %s again? I think their account changed.", cs[0].name))
	case len(cs) == 2:
		g.user(fmt.Sprintf("Can you look up %s and %s for me?", cs[0].name, cs[1].name))
	default:
		g.user(fmt.Sprintf(pick(g.rng, []string{"Can you pull up the account details for %s?", "What do we have on file for %s?", "Look up %s for me, please."}), cs[0].name))
	}
	var nameArgs []string
	for _, c := range cs {
		nameArgs = append(nameArgs, "lookup_customer", fmt.Sprintf(`{"name":%q}`, c.name))
	}
	ids := g.call("", nameArgs...)
	var replies []string
	for i, c := range cs {
		var idV, mgrV, balV string
		if c.id == nil {
			idV, mgrV = g.code("CUS", 5), g.personName()
		} else {
			idV, mgrV = current(c.id), current(c.manager)
			if g.chance(0.35) {
				mgrV = g.personName()
			}
		}
		balV = g.dollars(1, 90)
		c.openTickets = g.rng.IntN(7)
		turn := g.result(ids[i], fmt.Sprintf(`{"customer_id":%q,"name":%q,"tier":%q,"region":%q,"account_manager":%q,"open_balance":%q,"open_tickets":%d,"contract":"annual","notes":"prefers email, invoices in English"}`,
			idV, c.name, c.tier, c.region, mgrV, balV, c.openTickets))
		if c.id == nil {
			name := c.name
			c.id = g.newFact("cust/"+slug(name)+"/id", KindTool, name, "What is the customer id of "+name+"?", turn, idV,
				&factInfo{stmt: func(v string) string { return "The customer id of " + name + " is " + v + "." }})
			c.manager = g.newFact("cust/"+slug(name)+"/manager", KindTool, name, "Who is the account manager of "+name+"?", turn, mgrV,
				&factInfo{stmt: func(v string) string { return "The account manager of " + name + " is " + v + "." }})
			c.balance = g.newFact("cust/"+slug(name)+"/balance", KindTool, name, "What is the open balance of "+name+"?", turn, balV,
				&factInfo{stmt: func(v string) string { return "The open balance of " + name + " is " + v + "." }})
		} else {
			g.mention(c.id, turn, idV, ToolResult)
			g.mention(c.manager, turn, mgrV, ToolResult)
			g.mention(c.balance, turn, balV, ToolResult)
		}
		switch g.rng.IntN(3) {
		case 0:
			replies = append(replies, fmt.Sprintf("%s is a %s customer (id %s), managed by %s.", c.name, c.tier, idV, mgrV))
		case 1:
			replies = append(replies, fmt.Sprintf("%s: %s tier, %d open tickets, open balance %s.", c.name, c.tier, c.openTickets, balV))
		default:
			replies = append(replies, fmt.Sprintf("I found %s in the %s region.", c.name, c.region))
		}
	}
	reply := g.assistant(strings.Join(replies, " ") + " Anything specific you need?")
	for _, c := range cs {
		for _, f := range []*Fact{c.id, c.manager, c.balance} {
			if v := current(f); strings.Contains(g.msgs[reply].Content, v) {
				g.mention(f, reply, v, Echoed)
			}
		}
	}
	return true
}

func slug(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

// queryOrders: query_orders returns 3 to 6 open orders of a customer; the
// total of one of them is a fact.
func (g *gen) queryOrders() bool {
	if len(g.customers) == 0 {
		return false
	}
	c := pick(g.rng, g.customers)
	g.user(fmt.Sprintf("Which orders does %s have open right now?", c.name))
	ids := g.call("", "query_orders", fmt.Sprintf(`{"customer":%q,"status":"open"}`, c.name))
	n := 3 + g.rng.IntN(4)
	type row struct{ id, total string }
	rows := make([]row, n)
	var b strings.Builder
	fmt.Fprintf(&b, `{"customer":%q,"orders":[`, c.name)
	largest, largestCents := 0, 0
	for i := range rows {
		var cents int
		total := g.values.fresh(func() string {
			cents = 10000 + g.rng.IntN(990000)
			return fmt.Sprintf("%d.%02d USD", cents/100, cents%100)
		})
		rows[i] = row{g.orderID(), total}
		if cents > largestCents {
			largest, largestCents = i, cents
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"order_id":%q,"total":%q,"status":%q,"items":%d}`, rows[i].id, rows[i].total,
			pick(g.rng, []string{"open", "packing", "awaiting payment"}), 1+g.rng.IntN(12))
	}
	b.WriteString("]}")
	turn := g.result(ids[0], b.String())
	k := g.rng.IntN(n)
	oid := rows[k].id
	f := g.newFact("order/"+oid+"/total", KindTool, c.name, "What was the total of order "+oid+"?", turn, rows[k].total,
		&factInfo{stmt: func(v string) string { return "Order " + oid + " totals " + v + "." }})
	if g.chance(0.5) {
		reply := g.assistant(fmt.Sprintf("%s has %d open orders. The largest is %s at %s.", c.name, n, rows[largest].id, rows[largest].total))
		if largest == k {
			g.mention(f, reply, rows[k].total, Echoed)
		}
	} else {
		g.assistant(fmt.Sprintf("%s has %d open orders right now, nothing unusual.", c.name, n))
	}
	return true
}

var weatherCities = []string{"Porto", "Ghent", "Bergen", "Seville", "Krakow", "Galway"}

// fillerTool: weather or documentation search, sometimes both in parallel.
func (g *gen) fillerTool() bool {
	weather := func() (string, string, string) {
		city := pick(g.rng, weatherCities)
		cond := pick(g.rng, weatherConditions)
		temp := g.rng.IntN(30) - 3
		return city, fmt.Sprintf(`{"city":%q}`, city),
			fmt.Sprintf(`{"city":%q,"temp_c":%d,"conditions":%q,"wind_kmh":%d,"humidity":%d}`, city, temp, cond, g.rng.IntN(50), 30+g.rng.IntN(70))
	}
	docs := func() (string, string, string) {
		topic := pick(g.rng, docTopics)
		var b strings.Builder
		b.WriteString(`{"results":[`)
		for i := range 3 {
			c := pick(g.rng, concepts)
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"title":"How to %s (part %d)","snippet":%q}`, topic, i+1, g.paragraph(c, 2, 3))
		}
		b.WriteString("]}")
		return topic, fmt.Sprintf(`{"query":%q}`, topic), b.String()
	}
	switch g.rng.IntN(5) {
	case 0, 1:
		city, args, res := weather()
		g.user(fmt.Sprintf("What's the weather like in %s today?", city))
		id := g.call("", "get_weather", args)
		g.result(id[0], res)
		g.assistant("Here's the current weather in " + city + ". Looks like a normal day.")
	case 2, 3:
		topic, args, res := docs()
		g.user(fmt.Sprintf("Can you find our docs on %s?", topic))
		id := g.call("Let me search the docs.", "search_docs", args)
		g.result(id[0], res)
		g.assistant("I found three pages about " + topic + ". The first one is the most relevant.")
	default:
		city, wargs, wres := weather()
		topic, dargs, dres := docs()
		g.user(fmt.Sprintf("Two things: the weather in %s, and our docs on %s.", city, topic))
		ids := g.call("", "get_weather", wargs, "search_docs", dargs)
		g.result(ids[0], wres)
		g.result(ids[1], dres)
		g.assistant("Done: the weather in " + city + " is fine, and the docs on " + topic + " have three relevant pages.")
	}
	return true
}

func (g *gen) paragraph(concept string, lo, hi int) string {
	n := lo + g.rng.IntN(hi-lo+1)
	parts := make([]string, 0, n)
	for _, i := range g.rng.Perm(len(explainSentences))[:n] {
		parts = append(parts, fill(explainSentences[i], "{C}", capitalize(concept), "{c}", concept))
	}
	return strings.Join(parts, " ")
}

func (g *gen) chitchat() bool {
	g.user(pick(g.rng, chitUser))
	g.assistant(pick(g.rng, chitAssistant))
	return true
}

func (g *gen) explain() bool {
	c := pick(g.rng, concepts)
	g.user(fmt.Sprintf(pick(g.rng, explainUser), c))
	g.assistant(g.paragraph(c, 4, 8))
	return true
}

func (g *gen) status() bool {
	if len(g.topics) == 0 {
		return false
	}
	t := pick(g.rng, g.topics)
	a, b := 1+g.rng.IntN(9), 10+g.rng.IntN(20)
	g.user(fill(pick(g.rng, statusUser), "{T}", t.def.name, "{a}", fmt.Sprint(a), "{b}", fmt.Sprint(b), "{c}", fmt.Sprint(g.rng.IntN(5))))
	g.assistant(pick(g.rng, statusAssistant))
	return true
}
