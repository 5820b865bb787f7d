package inspector

import (
	"google.golang.org/protobuf/types/known/anypb"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// whereNow follows, from a session's compression events alone, where each
// of its messages is now: verbatim in L1, folded into a summary still in
// L1, into a summary in L2, archived to swap, and whether the last
// assembly recalled it or it is promoted. The conversation view shows it
// beside each message without replaying the whole session (SessionAt),
// which costs seconds on a session of thousands of turns.
type whereNow struct {
	sums     map[string]*placed // summary id → where it is
	promoted map[uint64]bool    // message ordinals promoted back
	recalled map[uint64]bool    // recalled by the latest assembly
	// assembled is the latest assembly, decoded into recalled only when
	// asked (every append has one: decoding each cost a cold index more
	// than all the rest).
	assembled *anypb.Any
	// sections is the latest ContextAssembled (kept, unlike assembled,
	// for the context page's sources and why: a few kilobytes of
	// references); rom and pending the session's active and pending ROM,
	// without their texts (version and libraries).
	sections     *anypb.Any
	rom, pending *memoryv1.Rom
}

type placed struct {
	first, last uint64 // the message ordinals it covers
	layer       string // "l1", "l2", "swap", "" (merged into another)
	// What the context page says of it (never its text).
	messages, tokens, covered uint32
	source                    string
}

func (w *whereNow) apply(b *memoryv1.EventBatch) {
	if w.sums == nil {
		w.sums, w.promoted, w.recalled = map[string]*placed{}, map[uint64]bool{}, map[uint64]bool{}
	}
	add := func(s *memoryv1.Summary, layer string) {
		if s == nil {
			return
		}
		for _, id := range s.GetSummaryIds() { // merged into s
			if p := w.sums[id]; p != nil {
				p.layer = ""
			}
		}
		w.sums[s.GetId()] = placedOf(s, layer)
	}
	for _, a := range b.GetEvents() {
		switch shortType(a) {
		case "ContextAssembled":
			w.assembled, w.sections = a, a
			continue
		case "L1Summarized", "L1Evicted", "L2Archived", "MessagesPromoted", "PromotedCleared",
			"SessionCreated", "RomUpdated", "RomActivated":
		default:
			continue
		}
		m, err := a.UnmarshalNew()
		if err != nil {
			continue
		}
		switch e := m.(type) {
		case *memoryv1.L1Summarized:
			add(e.GetSummary(), "l1")
		case *memoryv1.L1Evicted:
			for _, id := range e.GetMovedSummaryIds() {
				if p := w.sums[id]; p != nil {
					p.layer = "l2"
				}
			}
			add(e.GetSummary(), "l2")
		case *memoryv1.L2Archived:
			for _, s := range e.GetSummaries() {
				if p := w.sums[s.GetId()]; p != nil {
					p.layer = "swap"
				} else {
					w.sums[s.GetId()] = placedOf(s, "swap")
				}
			}
			add(e.GetCondensed(), "l2")
		case *memoryv1.MessagesPromoted:
			for _, msg := range e.GetMessages() {
				w.promoted[msg.GetSeq()] = true
			}
		case *memoryv1.PromotedCleared:
			clear(w.promoted)
		case *memoryv1.SessionCreated:
			w.rom = romRef(e.GetRom())
		case *memoryv1.RomUpdated:
			w.pending = romRef(e.GetRom())
		case *memoryv1.RomActivated:
			if w.pending.GetVersion() == e.GetVersion() {
				w.rom, w.pending = w.pending, nil
			}
		}
	}
}

// of says where message ordinal o is: a short label and a class for its
// colour. An archived summary's messages are in swap even when a condensed
// summary in L2 covers the same range: the most recent layer wins (L1,
// then L2, then swap).
func (w *whereNow) of(o uint64) (label, class string) {
	if w.assembled != nil {
		clear(w.recalled)
		e := &memoryv1.ContextAssembled{}
		if w.assembled.UnmarshalTo(e) == nil {
			for _, r := range e.GetSections().GetRecalled() {
				w.recalled[r.GetSeq()] = true
			}
		}
		w.assembled = nil
	}
	best := 0 // 0 verbatim, 1 swap, 2 l2, 3 l1 summary
	var id string
	for sid, p := range w.sums {
		if p.layer == "" || o < p.first || o > p.last {
			continue
		}
		r := map[string]int{"swap": 1, "l2": 2, "l1": 3}[p.layer]
		if r > best {
			best, id = r, sid
		}
	}
	switch best {
	case 3:
		label, class = "summarized in L1 ("+id+")", "w-l1sum"
	case 2:
		label, class = "summarized into L2 ("+id+")", "w-l2"
	case 1:
		label, class = "archived to swap", "w-swap"
	default:
		label, class = "in L1, verbatim", "w-l1"
	}
	if w.recalled[o] {
		label += " · recalled"
	}
	if w.promoted[o] {
		label += " · promoted"
	}
	return label, class
}

func placedOf(s *memoryv1.Summary, layer string) *placed {
	return &placed{first: s.GetFirstSeq(), last: s.GetLastSeq(), layer: layer, messages: uint32(len(s.GetMessageIds())),
		tokens: s.GetTokens(), covered: s.GetCoveredTokens(), source: s.GetSource()}
}

// romRef is r without its texts: what names it (version and libraries).
func romRef(r *memoryv1.Rom) *memoryv1.Rom {
	if r == nil {
		return nil
	}
	return &memoryv1.Rom{Version: r.GetVersion(), Libraries: r.GetLibraries()}
}
