package dialoggen

import (
	"encoding/json"
	"fmt"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// caps are the facts of a kind one speaker plants at most.
var caps = map[string]int{"hobby": 5, "pet": 4, "family": 8, "job": 2, "trip": 7, "injury": 3, "purchase": 6}

// maxFacts is the most facts a conversation plants (both speakers).
func maxFacts() int {
	n := 0
	for _, c := range caps {
		n += c
	}
	return 2 * n
}

var kinds = []string{"hobby", "pet", "family", "job", "trip", "injury", "purchase"}

// event plants a fact of the next speaker; false when none fits.
func (g *gen) event() bool {
	t := g.next()
	p := g.people[t]
	for _, k := range g.rng.Perm(len(kinds)) {
		kind := kinds[k]
		if p.count[kind] >= caps[kind] {
			continue
		}
		var f *fact
		switch kind {
		case "hobby":
			f = g.hobby(t)
		case "pet":
			f = g.pet(t)
		case "family":
			f = g.family(t)
		case "job":
			f = g.job(t)
		case "trip":
			f = g.trip(t)
		case "injury":
			f = g.injury(t)
		case "purchase":
			f = g.purchase(t)
		}
		if f == nil {
			continue
		}
		p.count[kind]++
		f.owner, f.kind = t, kind
		g.facts = append(g.facts, f)
		if f.correct != nil && g.rng.Float64() < 0.3 {
			f.correctAt = g.sitting + 1 + g.rng.IntN(3)
			g.pending = append(g.pending, f)
		}
		return true
	}
	return false
}

// correction corrects a pending fact of the next speaker planted in an
// earlier sitting; false when there is none.
func (g *gen) correction() bool {
	t := g.next()
	for i, f := range g.pending {
		if f.owner != t || f.correctAt > g.sitting {
			continue
		}
		v, ok := f.next()
		if !ok {
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			return false
		}
		f.corrTurn = g.say(t, f.correct(f.value, v))
		f.superseded = append(f.superseded, f.value)
		f.value = v
		g.pending = append(g.pending[:i], g.pending[i+1:]...)
		g.say(1-t, g.pick([]string{"Oh, good to know!", "Ha, noted.", "Got it, thanks for the update.", "Oh wow, that changes things."}))
		return true
	}
	return false
}

func (g *gen) hobby(t int) *fact {
	p := g.people[t]
	h, ok := g.pickPair(p, g.pl.hobbies)
	name, ok2 := g.unique(g.pl.firstNames)
	if !ok || !ok2 {
		return nil
	}
	who := g.names[t]
	rel := g.relTime(pastTimes)
	hq, lit := g.qterm(h)
	f := &fact{value: name, literal: lit,
		q:      fmt.Sprintf("Who leads the %s that %s attends?", hq, who),
		qFixed: fmt.Sprintf("Who leads the %s that %s attends these days?", hq, who),
		qWhen:  fmt.Sprintf("When did %s take up the %s?", who, hq),
		qEvent: "taking up the " + hq,
		next:   func() (string, bool) { return g.unique(g.pl.firstNames) },
		correct: func(old, new string) string {
			return fmt.Sprintf("Small update on my %s: %s moved away, so now %s teaches us. Different vibe entirely.", h.ev, old, new)
		},
	}
	if g.rng.Float64() < 0.4 {
		e1 := g.say(t, fmt.Sprintf("%s I signed up for a %s %s, finally doing something just for me.", g.opener(), h.ev, rel.phrase)+g.aside())
		g.say(1-t, g.pick([]string{"No way, that's awesome! Who's teaching it?", "Love that for you. Is the teacher any good?", "Ooh, fun! Who runs it?"}))
		e2 := g.say(t, fmt.Sprintf("%s, a %s. Very strict about warm-ups, but kind.", name, g.pick(g.pl.teacherDescr)))
		f.evidence = []int{e1, e2}
		g.dated(f, e1, h.ev, rel)
	} else {
		e1 := g.say(t, fmt.Sprintf("%s I %s a %s %s. The %s is a %s called %s, and I'm hooked already.",
			g.opener(), g.pick([]string{"signed up for", "enrolled in", "started going to", "joined"}), h.ev, rel.phrase, g.pick(g.pl.teacherWords), g.pick(g.pl.teacherDescr), name))
		f.evidence = []int{e1}
		g.dated(f, e1, h.ev, rel)
	}
	f.also = []string{h.ev}
	g.say(1-t, g.cheer())
	p.hobby = append(p.hobby, f)
	return f
}

func (g *gen) pet(t int) *fact {
	p := g.people[t]
	a, ok := g.pickPair(p, g.pl.pets)
	name, ok2 := g.unique(g.pl.petNames)
	if !ok || !ok2 {
		return nil
	}
	who := g.names[t]
	rel := g.relTime(pastTimes)
	he, him := "He", "him"
	if g.rng.IntN(2) == 0 {
		he, him = "She", "her"
	}
	aq, lit := g.qterm(a)
	f := &fact{value: name, literal: lit,
		q:      fmt.Sprintf("What is the name of %s's %s?", who, aq),
		qFixed: fmt.Sprintf("What is %s's %s called now?", who, aq),
		qWhen:  fmt.Sprintf("When did %s adopt the %s?", who, aq),
		qEvent: "adopting the " + aq,
		next:   func() (string, bool) { return g.unique(g.pl.petNames) },
		correct: func(old, new string) string {
			return fmt.Sprintf("Funny thing: our %s isn't %s anymore, we switched to %s because the vet kept mixing it up.", a.ev, old, new)
		},
	}
	if g.rng.Float64() < 0.4 {
		e1 := g.say(t, fmt.Sprintf("%s we brought home a %s from a %s %s!", g.opener(), a.ev, g.pick(g.pl.shelters), rel.phrase)+g.aside())
		g.say(1-t, fmt.Sprintf("Stop it, that's adorable! What are you calling %s?", him))
		e2 := g.say(t, fmt.Sprintf("%s! %s %s.", name, he, g.pick(g.pl.petAntics)))
		f.evidence = []int{e1, e2}
		g.dated(f, e1, a.ev, rel)
	} else {
		e1 := g.say(t, fmt.Sprintf("%s we brought home a %s from a %s %s. %s answers to %s and %s.", g.opener(), a.ev, g.pick(g.pl.shelters), rel.phrase, he, name, g.pick(g.pl.petAntics))+g.aside())
		f.evidence = []int{e1}
		g.dated(f, e1, a.ev, rel)
	}
	f.also = []string{a.ev}
	g.say(1-t, g.cheer())
	p.pets = append(p.pets, f)
	return f
}

func (g *gen) family(t int) *fact {
	p := g.people[t]
	r, ok := g.pickPair(p, g.pl.relatives)
	name, ok2 := g.unique(g.pl.firstNames)
	if !ok || !ok2 {
		return nil
	}
	who := g.names[t]
	rq, lit := g.qterm(r)
	var f *fact
	switch g.rng.IntN(3) {
	case 0:
		city, ok := g.unique(g.pl.cities)
		if !ok {
			return nil
		}
		rel := g.relTime(futureTimes)
		e1 := g.say(t, fmt.Sprintf("%s my %s %s is relocating to %s %s, new job and everything.", g.opener(), r.ev, name, city, rel.phrase)+g.aside())
		f = &fact{value: city, evidence: []int{e1},
			q:      fmt.Sprintf("Which city is %s's %s moving to?", who, rq),
			qFixed: fmt.Sprintf("Where is %s's %s going to live?", who, rq),
			next:   func() (string, bool) { return g.unique(g.pl.cities) },
			correct: func(old, new string) string {
				return fmt.Sprintf("Update on %s: the %s plan fell through, it's %s now. My %s is thrilled.", name, old, new, r.ev)
			},
		}
		f.qWhen = fmt.Sprintf("When is the move of %s's %s planned for?", who, rq)
		f.qEvent = fmt.Sprintf("the move of the %s", rq)
		g.dated(f, e1, city, rel)
	case 1:
		city, ok := g.unique(g.pl.cities)
		if !ok {
			return nil
		}
		rel := g.relTime(pastTimes)
		e1 := g.say(t, fmt.Sprintf("%s my %s %s got engaged %s! The ceremony is going to be in %s, of all places.", g.opener(), r.ev, name, rel.phrase, city)+g.aside())
		f = &fact{value: city, evidence: []int{e1},
			q:     fmt.Sprintf("Where will the wedding of %s's %s take place?", who, rq),
			qWhen: fmt.Sprintf("When did %s's %s announce a wedding?", who, rq),
		}
		f.qEvent = fmt.Sprintf("the wedding announcement of the %s", rq)
		g.dated(f, e1, city, rel)
	default:
		field, ok := g.unique(g.pl.fields)
		if !ok {
			return nil
		}
		rel := g.relTime(pastTimes)
		e1 := g.say(t, fmt.Sprintf("%s my %s %s just finished a degree in %s %s. First one in the family!", g.opener(), r.ev, name, field, rel.phrase)+g.aside())
		f = &fact{value: field, evidence: []int{e1},
			q:     fmt.Sprintf("What subject did %s's %s major in?", who, rq),
			qWhen: fmt.Sprintf("When did %s's %s graduate?", who, rq),
		}
		f.qEvent = fmt.Sprintf("the graduation of the %s", rq)
		g.dated(f, e1, field, rel)
	}
	f.literal = lit
	f.also = []string{name, r.ev}
	g.say(1-t, g.cheer())
	return f
}

func (g *gen) job(t int) *fact {
	company, ok := g.unique(g.pl.companies)
	role, ok2 := g.unique(g.pl.roles)
	if !ok || !ok2 {
		return nil
	}
	who := g.names[t]
	rel := g.relTime(pastTimes)
	e1 := g.say(t, fmt.Sprintf("%s I accepted an offer from %s %s. I'm going to be their new %s!", g.opener(), company, rel.phrase, role)+g.aside())
	f := &fact{evidence: []int{e1}, qWhen: fmt.Sprintf("When did %s get hired at %s?", who, company), qEvent: "getting hired at " + company}
	if g.rng.IntN(2) == 0 {
		f.value, f.q = company, fmt.Sprintf("Which employer brought %s on board most recently?", who)
	} else {
		f.value, f.q = role, fmt.Sprintf("What position did %s land at the new workplace?", who)
		f.qFixed = fmt.Sprintf("What is %s's title at the new workplace?", who)
		f.next = func() (string, bool) { return g.unique(g.pl.roles) }
		f.correct = func(old, new string) string {
			return fmt.Sprintf("HR sent the contract and the title is %s, not %s. Same work though.", new, old)
		}
	}
	g.dated(f, e1, company, rel)
	f.also = []string{company, role}
	g.say(1-t, g.cheer())
	return f
}

func (g *gen) trip(t int) *fact {
	p := g.people[t]
	city, ok := g.unique(g.pl.cities)
	occ, ok2 := g.pickPair(p, g.pl.occasions)
	if !ok || !ok2 {
		return nil
	}
	who := g.names[t]
	oq, lit := g.qterm(occ)
	f := &fact{value: city, qEvent: "the trip to " + city, literal: lit}
	if g.rng.IntN(2) == 0 {
		rel := g.relTime(pastTimes)
		e1 := g.say(t, fmt.Sprintf("%s we just got back from %s %s. We went %s and the %s was unreal.", g.opener(), city, rel.phrase, occ.ev, g.pick(g.pl.tripFood))+g.aside())
		f.evidence = []int{e1}
		f.q = fmt.Sprintf("Where did %s travel %s?", who, oq)
		f.qWhen = fmt.Sprintf("When was %s in %s?", who, city)
		g.dated(f, e1, city, rel)
	} else {
		rel := g.relTime(futureTimes)
		e1 := g.say(t, fmt.Sprintf("%s we booked flights to %s %s, %s. I already have a list of %s spots.", g.opener(), city, rel.phrase, occ.ev, g.pick(g.pl.tripFood))+g.aside())
		f.evidence = []int{e1}
		f.q = fmt.Sprintf("Where is %s heading %s?", who, oq)
		f.qWhen = fmt.Sprintf("When is %s's getaway to %s?", who, city)
		g.dated(f, e1, city, rel)
	}
	g.say(1-t, g.cheer())
	p.trips = append(p.trips, f)
	return f
}

func (g *gen) injury(t int) *fact {
	p := g.people[t]
	part, ok := g.unique(g.pl.bodyParts)
	act, ok2 := g.pickPair(p, g.pl.activities)
	if !ok || !ok2 {
		return nil
	}
	who := g.names[t]
	rel := g.relTime(pastTimes)
	e1 := g.say(t, fmt.Sprintf("Ugh, I messed up my %s %s %s. The physio says three weeks of rest.", part, act.ev, rel.phrase)+g.aside())
	aq, lit := g.qterm(act)
	f := &fact{value: part, evidence: []int{e1}, literal: lit,
		q:      fmt.Sprintf("Which body part did %s injure while %s?", who, aq),
		qWhen:  fmt.Sprintf("When did %s get hurt %s?", who, aq),
		qEvent: "the injury from " + aq,
	}
	g.dated(f, e1, part, rel)
	g.say(1-t, g.sympathy())
	return f
}

func (g *gen) price() (string, bool) {
	for range 100 {
		var v string
		if g.rng.IntN(2) == 0 {
			v = fmt.Sprintf("$%d", 120+g.rng.IntN(880))
		} else {
			v = fmt.Sprintf("$%d,%03d", 1+g.rng.IntN(9), g.rng.IntN(1000))
		}
		if !g.used[v] {
			g.used[v] = true
			return v, true
		}
	}
	return "", false
}

func (g *gen) purchase(t int) *fact {
	p := g.people[t]
	item, ok := g.pickPair(p, g.pl.purchases)
	price, ok2 := g.price()
	if !ok || !ok2 {
		return nil
	}
	who := g.names[t]
	rel := g.relTime(pastTimes)
	e1 := g.say(t, fmt.Sprintf("%s I finally bought a %s %s. Paid %s after some haggling.", g.opener(), item.ev, rel.phrase, price)+g.aside())
	iq, lit := g.qterm(item)
	f := &fact{value: price, evidence: []int{e1}, literal: lit,
		q:      fmt.Sprintf("How much did %s spend on the %s?", who, iq),
		qFixed: fmt.Sprintf("How much did %s spend on the %s in the end?", who, iq),
		qWhen:  fmt.Sprintf("When did %s get the %s?", who, iq),
		qEvent: "getting the " + iq,
		next:   g.price,
		correct: func(old, new string) string {
			return fmt.Sprintf("Checked the receipt for the %s: it was %s, not %s. Even better.", item.ev, new, old)
		},
	}
	g.dated(f, e1, item.ev, rel)
	f.also = []string{item.ev}
	g.say(1-t, g.cheer())
	return f
}

// episode is a task the user asks the assistant for help with: a lookup
// (tool call and result), a suggestion and a plan; the continuity
// questions follow it.
func (g *gen) episode() {
	if g.next() == 1 {
		g.say(1, g.smallLine())
	}
	d := g.pl.taskDomains[g.rng.IntN(len(g.pl.taskDomains))]
	var opts [3]string
	for i := range opts {
		v, ok := g.unique(g.placeNames(d.suffixes))
		if !ok {
			return
		}
		opts[i] = v
	}
	st := d.steps[g.rng.IntN(len(d.steps))]
	stepPlace, ok := g.unique(g.placeNames([]string{st.q}))
	if !ok {
		return
	}
	step := fmt.Sprintf(st.ev, stepPlace)
	g.say(0, fmt.Sprintf("Can you help me find %s? Nothing fancy.", d.ask))
	g.calls++
	callID := fmt.Sprintf("call_%d", g.calls)
	args, _ := json.Marshal(map[string]any{"query": d.ask, "limit": 3})
	type option struct {
		Name   string  `json:"name"`
		Rating float64 `json:"rating"`
	}
	res := map[string]any{"kind": d.kinds, "results": []option{{opts[0], 4.7}, {opts[1], 4.4}, {opts[2], 4.1}}}
	body, _ := json.Marshal(res)
	start := len(g.msgs)
	g.add(Message{Speaker: 1, Role: memoryv1.Role_ROLE_ASSISTANT, Content: "Let me look that up.",
		ToolCalls: []*memoryv1.ToolCall{{Id: callID, Name: d.tool, Arguments: string(args)}}})
	tool := g.add(Message{Speaker: 1, Role: memoryv1.Role_ROLE_TOOL, Content: string(body), ToolCallID: callID})
	suggest := g.add(Message{Speaker: 1, Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("I'd go with %s: %s.", opts[0], g.pick(d.reasons))})
	g.appends = append(g.appends, Span{start, len(g.msgs)})
	g.say(0, g.pick([]string{"Nice. What's the plan then?", "Okay, walk me through the plan?", "Love it. How should we do this?"}))
	plan := g.say(1, fmt.Sprintf("Here's the plan: first, lock in %s; then %s; finally, text everyone the time.", opts[0], step))
	if g.rng.IntN(2) == 0 {
		g.say(0, g.pick([]string{"Perfect, thank you!", "You're a lifesaver.", "Great, that works."}))
		g.say(1, g.pick([]string{"Anytime!", "Happy to help.", "Enjoy!"}))
	}
	at := len(g.msgs)
	g.cont = append(g.cont,
		Question{Category: LastTurns, At: at, Evidence: []int{suggest}, Answer: opts[0], Needs: [][]string{{opts[0]}},
			Text: fmt.Sprintf(g.pick([]string{"Sorry, which %s did you just suggest?", "Wait, what was the %s you recommended a moment ago?"}), d.kinds)},
		Question{Category: ToolResult, At: at, Evidence: []int{tool}, Answer: opts[1] + ", " + opts[2], Needs: [][]string{{opts[1]}, {opts[2]}},
			Text: fmt.Sprintf("What other %s did the search turn up?", d.plural)},
		Question{Category: Plan, At: at, Evidence: []int{plan}, Answer: step, Needs: [][]string{{stepPlace}},
			Text: "What was step two of the plan again?"},
	)
}

// placeNames is every place name with one of the suffixes.
func (g *gen) placeNames(suffixes []string) []string {
	var out []string
	for _, f := range g.pl.placeFirst {
		for _, s := range suffixes {
			out = append(out, f+" "+s)
		}
	}
	return out
}
