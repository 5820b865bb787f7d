package segmented

import (
	"cmp"
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Items of another session that follow one of the same session and day in
// the recalled section show under its header ("[2023-05-08 earlier
// session, user] …" then "[assistant] …"): the day and "earlier session"
// cost 13 tokens, as much as a short chat turn. The allocation counts each
// part with its own header (the order is known only once the parts are
// chosen); continueEarlier then renders the continued items short and
// spends the tokens they give back on more of the earlier parts left out,
// best first, until none fits.

// continuePasses bounds the refills: each adds the parts the tokens given
// back hold, which give back a little more.
const continuePasses = 3

// continueEarlier marks the continued items of recalled (sorted by
// compareRecalled), renders them short, and adds earlier parts not chosen
// (chosen: the allocation's parts) while the tokens the continued items
// give back hold them, so the context never takes more than the
// allocation counted. It returns the recalled section, sorted.
func (p *planner) continueEarlier(recalled []*memoryv1.RecalledItem, chosen []int) []*memoryv1.RecalledItem {
	if len(p.earlierPart) == 0 {
		return recalled
	}
	taken := make(map[int]bool, len(chosen))
	for _, i := range chosen {
		taken[i] = true
	}
	// The parts left out, best first (as Allocate orders them).
	var rest []int
	for i, part := range p.parts {
		if part.Kind == PartEarlier && !taken[i] && part.Value > 0 && part.Tokens > 0 && p.refs[i].rec != 0 {
			rest = append(rest, i)
		}
	}
	slices.SortFunc(rest, func(a, b int) int {
		pa, pb := p.parts[a], p.parts[b]
		if c := cmp.Compare(pb.density(), pa.density()); c != 0 {
			return c
		}
		if c := cmp.Compare(pb.Value, pa.Value); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	// added: what the parts added count; the items shown take what the
	// allocation counted, less given, plus added. Given never falls: an
	// added item either opens its sitting (its count, nothing given) or
	// continues one, and makes no continued item open its sitting again
	// (a day's items of a session are contiguous).
	var added uint64
	for pass := 0; ; pass++ {
		given := p.markContinued(recalled)
		if pass == continuePasses || len(rest) == 0 || given <= added {
			return recalled
		}
		free := given - added
		grew := false
		kept := rest[:0]
		for _, i := range rest {
			if t := p.parts[i].Tokens; t <= free {
				free -= t
				added += t
				recalled = append(recalled, p.recs[p.refs[i].rec-1].item())
				grew = true
				continue
			}
			kept = append(kept, i)
		}
		rest = kept
		if !grew {
			return recalled
		}
		slices.SortFunc(recalled, compareRecalled)
	}
}

// markContinued sets each earlier item's continued flag, text bounds and
// tokens from its place in recalled, and returns the tokens the continued
// items give back to their parts' counts.
func (p *planner) markContinued(recalled []*memoryv1.RecalledItem) uint64 {
	var given uint64
	for k, it := range recalled {
		if it.GetSessionId() == "" {
			continue
		}
		part, ok := p.earlierPart[earlierRef{it.GetSessionId(), it.GetSeq()}]
		if !ok || p.refs[part].rec == 0 {
			continue
		}
		m, counted := p.recs[p.refs[part].rec-1].m, p.parts[part].Tokens
		if cont := k > 0 && sameSitting(recalled[k-1], it); cont != it.GetContinued() {
			p.render(it, m, cont, counted)
		}
		given += counted - min(counted, uint64(it.GetTokens()))
	}
	return given
}

// render sets item it of message m to show continued or under its own
// header (prepareMessage), never counting more than its part (counted): a
// continued text that would (a cut landing differently) keeps its header.
func (p *planner) render(it *memoryv1.RecalledItem, m *memoryv1.Message, cont bool, counted uint64) {
	form := formEarlier
	if cont {
		form = formContinued
	}
	pr := prepareMessage(p.tok, form, m)
	if !pr.ok || uint64(pr.tokens) > counted {
		if !cont {
			return
		}
		cont, pr = false, prepareMessage(p.tok, formEarlier, m)
		if !pr.ok {
			return
		}
	}
	it.Continued, it.Tokens, it.TextBytes, it.Trimmed = cont, pr.tokens, pr.bytes, pr.trimmed
}

// sameSitting reports whether b, an item of another session, follows a of
// the same session and day.
func sameSitting(a, b *memoryv1.RecalledItem) bool {
	return a.GetSessionId() != "" && a.GetSessionId() == b.GetSessionId() && sameDay(a.GetSaidUnixNano(), b.GetSaidUnixNano())
}
