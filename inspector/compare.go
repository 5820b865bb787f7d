package inspector

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// comparePage is two moments of one session's context side by side: the
// tokens of each section at both, and what changed from A to B, item by
// item (added, removed, moved between layers, tokens changed) and the ROM
// version of each.
type comparePage struct {
	Base
	Info        *memoryv1.SessionInfo
	Status      string
	A, B        atView
	First, Last uint64
	Sections    []sectionDelta
	Changes     []change
	// Between is what the batches after A up to B did.
	Between betweenView
	// Count of each kind of change, and Cut the changes not listed.
	Added, Removed, Moved, Retokened, Cut int
}

type sectionDelta struct {
	Layer, Title   string
	A, B           uint32
	Delta          string
	Class          string // "up", "down" or ""
	ItemsA, ItemsB int
}

// change is one item's change from A to B.
type change struct {
	Kind  string // added, removed, moved, tokens, rom
	Text  string
	Class string
	// Reason is why, told from the batches between A and B (nil: they do
	// not tell).
	Reason *reason
}

// maxChanges bounds the changes listed (two distant moments of a long
// session differ in hundreds of items).
const maxChanges = 500

// comparePage answers /ui/s/{id}/compare?a=&b=: the context at stream
// sequence a and at b (each the last batch at or before it; b defaults to
// the latest, a to the batch before b). A point outside the session or the
// time-travel window is a 404 that says so; a malformed one a 400.
func (in *Inspector) comparePage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	info, seqs, err := in.batchSeqs(ctx, v, id)
	if err != nil {
		return "", nil, err
	}
	q := r.URL.Query()
	parse := func(field string, def uint64) (uint64, error) {
		s := q.Get(field)
		if s == "" || s == "latest" {
			return def, nil
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return 0, badInput{field, fmt.Sprintf("%q is not a stream sequence (a whole number > 0, or latest)", s)}
		}
		return n, nil
	}
	last := seqs[len(seqs)-1]
	b, err := parse("b", last)
	if err != nil {
		return "", nil, err
	}
	prev := seqs[0]
	if i := indexAtOrBefore(seqs, b); i > 0 {
		prev = seqs[i-1]
	}
	a, err := parse("a", prev)
	if err != nil {
		return "", nil, err
	}
	p := comparePage{Base: sessionBase(v, info), Info: info, Status: statusName(info.GetStatus()), First: seqs[0], Last: last}
	p.Tab = "compare"
	for _, side := range []struct {
		name string
		seq  uint64
		at   *atView
	}{{"a", a, &p.A}, {"b", b, &p.B}} {
		if *side.at, err = in.contextAt(ctx, v, id, seqs, side.seq, false); err != nil {
			return "", nil, err
		}
		if o := side.at.Outside; o != "" {
			return "error.html", withCode{side.at.Code, errorPage{Base: p.Base, Code: side.at.Code, Title: http.StatusText(side.at.Code),
				Message: fmt.Sprintf("%s: %s This session's batches run from seq %d to seq %d.", side.name, o, seqs[0], last)}}, nil
		}
	}
	var c *causes
	if p.Between, c, err = in.between(ctx, v, id, p.A.Shown, p.B.Shown); err != nil {
		return "", nil, err
	}
	p.diff(c)
	return "compare.html", p, nil
}

// indexAtOrBefore is the index of the last of seqs at or before s (-1:
// none).
func indexAtOrBefore(seqs []uint64, s uint64) int {
	i := len(seqs) - 1
	for i >= 0 && seqs[i] > s {
		i--
	}
	return i
}

// erasedMark starts the text a past context shows for a memory or
// recalled item whose source was erased since (segmented.ErasedText,
// segmented.ErasedRecalledText).
const erasedMark = "[erased] "

// placedItem is an item of one side: its layer (section title) and tokens.
type placedItem struct {
	layer, title string
	tokens       uint32
	label        string
	// gone: the item shows no text (a memory or recalled item whose
	// source was erased since).
	gone bool
}

// itemKey names an item the same in every layer it moves to: a message
// recalled from swap is the message, an archived summary recalled is the
// summary.
func itemKey(id string) string {
	id = strings.TrimPrefix(id, "recalled:")
	return strings.TrimPrefix(id, "summary:")
}

func sideItems(v contextView) (map[string]placedItem, []string) {
	m := map[string]placedItem{}
	var order []string
	for _, s := range v.Sections {
		for _, it := range s.Items {
			k := itemKey(it.ID)
			if _, dup := m[k]; !dup {
				order = append(order, k)
			}
			m[k] = placedItem{layer: s.Layer, title: s.Title, tokens: it.Tokens, label: it.Role + " " + it.ID + " · " + it.Source,
				gone: isSectionLayer(s.Layer) && (it.Content == "" || strings.HasPrefix(it.Content, erasedMark))}
		}
	}
	return m, order
}

// diff fills the sections' deltas and the changes from A to B, each with
// its reason when c tells it.
func (p *comparePage) diff(c *causes) {
	a, b := p.A.Context, p.B.Context
	byLayer := map[string]int{}
	for _, s := range a.Sections {
		byLayer[s.Layer] = len(p.Sections)
		p.Sections = append(p.Sections, sectionDelta{Layer: s.Layer, Title: s.Title, A: s.Tokens, ItemsA: len(s.Items)})
	}
	for _, s := range b.Sections {
		i, ok := byLayer[s.Layer]
		if !ok {
			i = len(p.Sections)
			p.Sections = append(p.Sections, sectionDelta{Layer: s.Layer, Title: s.Title})
		}
		p.Sections[i].B, p.Sections[i].ItemsB = s.Tokens, len(s.Items)
	}
	for i := range p.Sections {
		d := &p.Sections[i]
		switch delta := int64(d.B) - int64(d.A); {
		case delta > 0:
			d.Delta, d.Class = fmt.Sprintf("+%d", delta), "up"
		case delta < 0:
			d.Delta, d.Class = fmt.Sprint(delta), "down"
		default:
			d.Delta = "0"
		}
	}
	add := func(kind, class, text, k string, x, y placedItem) {
		if len(p.Changes) == maxChanges {
			p.Cut++
			return
		}
		p.Changes = append(p.Changes, change{Kind: kind, Class: class, Text: text, Reason: c.why(kind, k, x, y)})
	}
	if a.Rom != b.Rom {
		add("rom", "ch-moved", fmt.Sprintf("ROM version %d → %d", a.Rom, b.Rom), "", placedItem{}, placedItem{})
	}
	ia, orderA := sideItems(a)
	ib, orderB := sideItems(b)
	for _, k := range orderB {
		y := ib[k]
		x, ok := ia[k]
		switch {
		case !ok:
			p.Added++
			add("added", "ch-added", fmt.Sprintf("+ %s: %s (%d tokens)", y.title, y.label, y.tokens), k, x, y)
		case x.layer != y.layer:
			p.Moved++
			add("moved", "ch-moved", fmt.Sprintf("→ %s → %s: %s (%d → %d tokens)", x.title, y.title, y.label, x.tokens, y.tokens), k, x, y)
		case x.tokens != y.tokens:
			p.Retokened++
			add("tokens", "ch-tokens", fmt.Sprintf("± %s: %s (%d → %d tokens)", y.title, y.label, x.tokens, y.tokens), k, x, y)
		}
	}
	for _, k := range orderA {
		if _, ok := ib[k]; !ok {
			x := ia[k]
			p.Removed++
			add("removed", "ch-removed", fmt.Sprintf("− %s: %s (%d tokens)", x.title, x.label, x.tokens), k, x, placedItem{})
		}
	}
}
