package inspector

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// betweenView is what the session's batches after A up to B did: the
// messages appended (the user messages named), the compressions, the
// sections chosen, the ROM changes and the erasures, each listed with the
// batch that did it (a row of the timeline).
type betweenView struct {
	From, To          uint64
	Batches, Appended int
	// Users are the user messages appended; past maxUsers, the first and
	// last half of them, with MoreUsers the count left out between.
	Users, LastUsers                                      []string
	MoreUsers                                             int
	Compressions, Assemblies, RomChanges, Erasures, Other int
	Events                                                []happening
	Cut                                                   int
}

// happening is one thing a batch between A and B did.
type happening struct {
	Seq        uint64
	Kind, Text string
}

// reason is why an item changed: Text, then a link to the batch Seq on the
// timeline, then After.
type reason struct {
	Text  string
	Seq   uint64
	After string
}

// maxHappenings and maxUsers bound the list of what happened and the user
// messages named (the counts stay whole).
const (
	maxHappenings = 200
	maxUsers      = 20
)

// causes maps the items of the two contexts to the batches between them
// that explain their change. Each map keeps the last batch that did it.
type causes struct {
	appended   map[string]uint64   // message id → its append
	summarized map[string]sumCause // message id → the summary it went into
	made       map[string]uint64   // summary id → the batch that made it in L1
	evicted    map[string]uint64   // summary id → the batch that moved it to L2
	archived   map[string]uint64   // summary id → the batch that archived it to swap
	condensed  map[string]uint64   // summary id → the archive that condensed it
	replaced   map[string]uint64   // summary id → its rewrite
	promoted   map[string]uint64   // message id → its promotion
	cleared    map[string]uint64   // message id → its promotion cleared
	// assembled is the last batch that stored the sections, for message
	// assembledFor.
	assembled    uint64
	assembledFor string
	rom          reason
}

type sumCause struct {
	id  string
	seq uint64
	// evicted: the summary went straight to L2 (L1Evicted).
	evicted bool
}

func newCauses() *causes {
	return &causes{appended: map[string]uint64{}, summarized: map[string]sumCause{}, made: map[string]uint64{},
		evicted: map[string]uint64{}, archived: map[string]uint64{}, condensed: map[string]uint64{}, replaced: map[string]uint64{},
		promoted: map[string]uint64{}, cleared: map[string]uint64{}}
}

// between reads the session's batches in (from, to] and returns what they
// did and the causes they hold for the contexts' changes.
func (in *Inspector) between(ctx context.Context, v *viewer, id string, from, to uint64) (betweenView, *causes, error) {
	bv := betweenView{From: from, To: to}
	c := newCauses()
	if to <= from {
		return bv, c, nil
	}
	add := func(seq uint64, kind, text string) {
		if len(bv.Events) == maxHappenings {
			bv.Cut++
			return
		}
		bv.Events = append(bv.Events, happening{Seq: seq, Kind: kind, Text: text})
	}
	err := in.readBatches(ctx, v, id, from, to, func(ch *memoryv1.WatchChange) bool {
		bv.Batches++
		seq := ch.GetSeq()
		for _, a := range ch.GetBatch().GetEvents() {
			m, err := a.UnmarshalNew()
			if err != nil {
				if kindOf(shortType(a)) == "erase" {
					bv.Erasures++
					add(seq, "erase", shortType(a))
				}
				continue
			}
			bv.note(c, seq, shortType(a), m, add)
		}
		return true
	})
	if n := len(bv.Users); n > maxUsers {
		bv.Users, bv.LastUsers, bv.MoreUsers = bv.Users[:maxUsers/2], bv.Users[n-maxUsers/2:], n-maxUsers
	}
	return bv, c, err
}

// note records one event of batch seq.
func (bv *betweenView) note(c *causes, seq uint64, typ string, m any, add func(uint64, string, string)) {
	switch e := m.(type) {
	case *memoryv1.MessagesAppended:
		var users []string
		for _, msg := range e.GetMessages() {
			bv.Appended++
			c.appended[msg.GetId()] = seq
			if msg.GetRole() == memoryv1.Role_ROLE_USER {
				users = append(users, msg.GetId())
				bv.Users = append(bv.Users, msg.GetId())
			}
		}
		text := fmt.Sprintf("%d messages appended", len(e.GetMessages()))
		if len(users) > 0 {
			text += " (user " + strings.Join(users, ", ") + ")"
		}
		add(seq, "append", text)
	case *memoryv1.L1Summarized:
		s := e.GetSummary()
		bv.Compressions++
		c.made[s.GetId()] = seq
		for _, id := range s.GetMessageIds() {
			c.summarized[id] = sumCause{id: s.GetId(), seq: seq}
		}
		add(seq, "compress", "L1Summarized: "+detail(e))
	case *memoryv1.L1Evicted:
		bv.Compressions++
		if s := e.GetSummary(); s != nil {
			c.evicted[s.GetId()] = seq
			for _, id := range s.GetMessageIds() {
				c.summarized[id] = sumCause{id: s.GetId(), seq: seq, evicted: true}
			}
		}
		for _, id := range e.GetMovedSummaryIds() {
			c.evicted[id] = seq
		}
		add(seq, "compress", "L1Evicted: "+detail(e))
	case *memoryv1.L2Archived:
		bv.Compressions++
		for _, s := range e.GetSummaries() {
			c.archived[s.GetId()] = seq
		}
		if s := e.GetCondensed(); s != nil {
			c.condensed[s.GetId()] = seq
		}
		add(seq, "compress", "L2Archived: "+detail(e))
	case *memoryv1.SummaryReplaced:
		c.replaced[e.GetSummaryId()] = seq
		add(seq, "summary", "SummaryReplaced: "+detail(e))
	case *memoryv1.MessagesPromoted:
		for _, msg := range e.GetMessages() {
			c.promoted[msg.GetId()] = seq
		}
		add(seq, "recall", "MessagesPromoted: "+detail(e))
	case *memoryv1.PromotedCleared:
		for _, id := range e.GetMessageIds() {
			c.cleared[id] = seq
		}
		add(seq, "recall", fmt.Sprintf("PromotedCleared: %d messages", len(e.GetMessageIds())))
	case *memoryv1.ContextAssembled:
		bv.Assemblies++
		c.assembled, c.assembledFor = seq, e.GetSections().GetForMessageId()
		sec := e.GetSections()
		add(seq, "assemble", fmt.Sprintf("sections chosen for message %s: %d recalled, %d memory items", sec.GetForMessageId(), len(sec.GetRecalled()), len(sec.GetMemory())))
	case *memoryv1.RomUpdated:
		bv.RomChanges++
		c.rom = reason{Text: fmt.Sprintf("ROM v%d stored (new patterns or library) at", e.GetRom().GetVersion()), Seq: seq}
		add(seq, "rom", fmt.Sprintf("RomUpdated: ROM version %d", e.GetRom().GetVersion()))
	case *memoryv1.RomActivated:
		bv.RomChanges++
		c.rom = reason{Text: fmt.Sprintf("ROM v%d activated at", e.GetVersion()), Seq: seq}
		add(seq, "rom", fmt.Sprintf("RomActivated: ROM version %d", e.GetVersion()))
	default:
		if kindOf(typ) == "erase" {
			bv.Erasures++
			add(seq, "erase", typ)
		}
	}
}

// isSectionLayer: the memory and recalled sections, chosen anew for each
// user message.
func isSectionLayer(layer string) bool {
	return layer == segmented.LayerMemory || layer == segmented.LayerRecalled
}

// why is the reason for one item's change (kind: added, removed, moved,
// tokens), nil when the batches between do not tell it. x is the item at
// A, y at B (zero when absent).
func (c *causes) why(kind, k string, x, y placedItem) *reason {
	seqOf := func(m map[string]uint64) (uint64, bool) { s, ok := m[k]; return s, ok }
	chosen := func(gone placedItem) *reason {
		if c.assembled == 0 {
			return nil
		}
		r := &reason{Text: fmt.Sprintf("the sections were chosen again for message %s at", c.assembledFor), Seq: c.assembled}
		if gone.layer != "" && gone.gone {
			r.After = "; its text was erased since"
		}
		return r
	}
	if x.layer == segmented.LayerROM || y.layer == segmented.LayerROM {
		kind = "rom"
	}
	switch kind {
	case "added":
		switch {
		case isSectionLayer(y.layer):
			return chosen(placedItem{})
		case y.layer == segmented.LayerL2:
			if s, ok := seqOf(c.condensed); ok {
				return &reason{Text: "condensed from archived summaries (compression at", Seq: s, After: ")"}
			}
			if s, ok := seqOf(c.evicted); ok {
				return &reason{Text: "evicted from L1 to L2 (compression at", Seq: s, After: ")"}
			}
		case y.layer == segmented.LayerPromoted:
			if s, ok := seqOf(c.promoted); ok {
				return &reason{Text: "promoted from swap at", Seq: s}
			}
		}
		if s, ok := seqOf(c.appended); ok {
			return &reason{Text: "appended at", Seq: s}
		}
		if s, ok := seqOf(c.made); ok {
			return &reason{Text: "made by the compression at", Seq: s}
		}
	case "removed":
		if sc, ok := c.summarized[k]; ok {
			text := "summarized into " + sc.id
			if sc.evicted {
				text += ", evicted to L2"
			}
			return &reason{Text: text + " (compression at", Seq: sc.seq, After: ")"}
		}
		if s, ok := seqOf(c.archived); ok {
			return &reason{Text: "archived to swap (compression at", Seq: s, After: ")"}
		}
		if s, ok := seqOf(c.cleared); ok && x.layer == segmented.LayerPromoted {
			return &reason{Text: "its promotion was cleared at", Seq: s}
		}
		if isSectionLayer(x.layer) {
			return chosen(x)
		}
	case "moved":
		if isSectionLayer(x.layer) || isSectionLayer(y.layer) {
			return chosen(x)
		}
		if y.layer == segmented.LayerL2 {
			if s, ok := seqOf(c.evicted); ok {
				return &reason{Text: "evicted from L1 to L2 (compression at", Seq: s, After: ")"}
			}
		}
		if y.layer == segmented.LayerPromoted {
			if s, ok := seqOf(c.promoted); ok {
				return &reason{Text: "promoted from swap at", Seq: s}
			}
		}
	case "tokens":
		if s, ok := seqOf(c.replaced); ok {
			return &reason{Text: "rewritten at", Seq: s}
		}
		if isSectionLayer(y.layer) {
			return chosen(placedItem{})
		}
	case "rom":
		if c.rom.Seq != 0 {
			r := c.rom
			return &r
		}
	}
	return nil
}
