package dialoggen

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// endQuestions are the questions asked after the whole conversation, in a
// seeded random order (categories mixed, as a user asks them).
func (g *gen) endQuestions() []Question {
	var qs []Question
	for _, f := range g.facts {
		if len(f.superseded) > 0 {
			qs = append(qs, Question{Category: Correction, Text: f.qFixed, Evidence: []int{f.corrTurn}, Answer: f.value,
				Needs: [][]string{{f.value}}, Superseded: slices.Clone(f.superseded), Paraphrased: !f.literal})
		} else {
			qs = append(qs, Question{Category: SingleHop, Text: f.q, Evidence: slices.Clone(f.evidence), Answer: f.value, Needs: [][]string{{f.value}}, Paraphrased: !f.literal})
		}
		if f.qWhen != "" && g.rng.Float64() < 0.75 {
			s := g.sittings[f.sitting]
			day := time.Unix(0, s.UnixNano).UTC()
			qs = append(qs, Question{Category: Temporal, Text: f.qWhen, Evidence: []int{f.whenTurn},
				Answer: fmt.Sprintf(f.rel.answer, longDate(day)), Needs: [][]string{{f.key}, slices.Clone(s.DateForms)}, Paraphrased: !f.literal})
		}
	}
	for t, p := range g.people {
		who := g.names[t]
		if q, ok := multiHop(p.pets, fmt.Sprintf("What are the names of all the animals %s has?", who)); ok {
			qs = append(qs, q)
		}
		if q, ok := multiHop(p.trips, fmt.Sprintf("Which cities has %s traveled to or planned a journey to?", who)); ok {
			qs = append(qs, q)
		}
		if q, ok := multiHop(p.hobby, fmt.Sprintf("Who are all the people leading the courses %s attends?", who)); ok {
			qs = append(qs, q)
		}
		qs = append(qs, g.howLong(t)...)
	}
	g.rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	return qs
}

// multiHop asks for the current values of all fs (at least two).
func multiHop(fs []*fact, text string) (Question, bool) {
	if len(fs) < 2 {
		return Question{}, false
	}
	q := Question{Category: MultiHop, Text: text, Paraphrased: true}
	var vals []string
	for _, f := range fs {
		ev := f.evidence
		if len(f.superseded) > 0 {
			ev = []int{f.corrTurn}
			q.Superseded = append(q.Superseded, f.superseded...)
		}
		q.Evidence = append(q.Evidence, ev...)
		q.Needs = append(q.Needs, []string{f.value})
		vals = append(vals, f.value)
	}
	slices.Sort(q.Evidence)
	q.Answer = strings.Join(vals, ", ")
	return q, true
}

// howLong asks the time between two dated events of speaker t said in
// different sittings (at most two questions).
func (g *gen) howLong(t int) []Question {
	var fs []*fact
	for _, f := range g.facts {
		if f.owner == t && f.qEvent != "" {
			fs = append(fs, f)
		}
	}
	var out []Question
	for _, k := range g.rng.Perm(len(fs)) {
		if len(out) == 2 || k+1 >= len(fs) {
			continue
		}
		a := fs[k]
		var b *fact
		for _, c := range fs[k+1:] {
			if c.sitting >= a.sitting+2 {
				b = c
				break
			}
		}
		if b == nil {
			continue
		}
		days := int(b.eventDay.Sub(a.eventDay).Hours() / 24)
		answer := fmt.Sprintf("about %d days", days)
		if days >= 14 {
			answer = fmt.Sprintf("about %d weeks", (days+3)/7)
		}
		sa, sb := g.sittings[a.sitting], g.sittings[b.sitting]
		out = append(out, Question{Category: HowLong, Paraphrased: !a.literal && !b.literal,
			Text:     fmt.Sprintf("How much time passed between %s and %s for %s?", a.qEvent, b.qEvent, g.names[t]),
			Evidence: []int{a.whenTurn, b.whenTurn}, Answer: answer,
			Needs: [][]string{{a.key}, {b.key}, slices.Clone(sa.DateForms), slices.Clone(sb.DateForms)}})
	}
	return out
}
