package inspector

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// liveSources names the sources of cx, the session's context now as the
// API answered it (the live actor), without replaying the session: the
// ROM, the summaries and the sections come from the session's index
// (read once, then only what was stored since), and the verbatim messages
// from the few batches that hold them (those after every summary, and the
// promoted ones). Replaying a 5,000-turn session took most of a second
// per page; the context page and the latest point of time travel take
// this way. Nothing of it is kept after the page.
func (in *Inspector) liveSources(ctx context.Context, v *viewer, id string, cx *memoryv1.ContextReply) (sources, error) {
	_, refs, _, si, err := in.index(ctx, v, id)
	if err != nil {
		return sources{}, err
	}
	si.mu.Lock()
	w := &si.where
	rom := w.rom
	if w.pending != nil && w.pending.GetVersion() == cx.GetRomVersion() {
		rom = w.pending
	}
	var sec *memoryv1.Assembled
	if w.sections != nil {
		e := &memoryv1.ContextAssembled{}
		if w.sections.UnmarshalTo(e) == nil {
			sec = e.GetSections()
		}
	}
	src := emptySources(rom, sec)
	var summarized uint64 // the last message ordinal any summary covers
	for sid, p := range w.sums {
		src.sums[sid] = p
		summarized = max(summarized, p.last)
	}
	promoted := make([]uint64, 0, len(w.promoted))
	for o := range w.promoted {
		promoted = append(promoted, o)
	}
	si.mu.Unlock()

	want := map[string]bool{}
	for _, m := range cx.GetMessages() {
		if l := m.GetLayer(); (l == segmented.LayerL1 || l == segmented.LayerPromoted) && src.sums[m.GetId()] == nil {
			want[m.GetId()] = true
		}
	}
	if len(want) == 0 || len(refs) == 0 {
		return src, nil
	}
	// A message the node numbered (id m<seq>) is found in the index: its
	// batch gives its turn, the context its day. Only the others (ids the
	// client gave, batches of more than 64 messages) are read from the log.
	said := map[string]int64{}
	for _, m := range cx.GetMessages() {
		if want[m.GetId()] {
			said[m.GetId()] = m.GetSaidUnixNano()
		}
	}
	numbered := make([]ordinalOf, 0, len(want))
	for mid := range want {
		if o, ok := serverOrdinal(mid); ok {
			numbered = append(numbered, ordinalOf{mid, o})
		}
	}
	slices.SortFunc(numbered, func(a, b ordinalOf) int { return cmp.Compare(b.o, a.o) })
	j := len(refs) - 1
	for _, n := range numbered {
		for j >= 0 && (refs[j].First == 0 || refs[j].First > n.o) {
			j--
		}
		if j < 0 {
			break
		}
		if turn, ok := refs[j].turnOf(n.o); ok {
			src.msgs[n.id] = &memoryv1.Message{Id: n.id, Seq: n.o, Turn: turn, SaidUnixNano: said[n.id]}
			delete(want, n.id)
		}
	}
	if len(want) == 0 {
		return src, nil
	}
	found := len(src.msgs)
	keep := func(ch *memoryv1.WatchChange) bool {
		for _, a := range ch.GetBatch().GetEvents() {
			if a.MessageName() != messagesAppendedName {
				continue
			}
			ev := &memoryv1.MessagesAppended{}
			if a.UnmarshalTo(ev) != nil {
				continue
			}
			for _, m := range ev.GetMessages() {
				if want[m.GetId()] {
					src.msgs[m.GetId()] = &memoryv1.Message{Id: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(),
						SaidUnixNano: m.GetSaidUnixNano(), CreatedUnixNano: m.GetCreatedUnixNano()}
				}
			}
		}
		return len(src.msgs)-found < len(want)
	}
	// The batches after the last summarized message: the verbatim L1.
	i := len(refs)
	for k := len(refs) - 1; k >= 0; k-- {
		if refs[k].First != 0 && refs[k].Last <= summarized {
			break
		}
		i = k
	}
	for i < len(refs) && refs[i].First == 0 {
		i++
	}
	if i < len(refs) {
		if err := in.readBatches(ctx, v, id, refs[i].Seq-1, refs[len(refs)-1].Seq, keep); err != nil {
			return src, err
		}
	}
	// The promoted messages, each in its own batch.
	for _, o := range promoted {
		if o > summarized || len(src.msgs)-found == len(want) {
			continue
		}
		j := slices.IndexFunc(refs, func(r batchRef) bool { return r.First != 0 && r.First <= o && o <= r.Last })
		if j >= 0 {
			if err := in.readBatches(ctx, v, id, refs[j].Seq-1, refs[j].Seq, keep); err != nil {
				return src, err
			}
		}
	}
	return src, nil
}

type ordinalOf struct {
	id string
	o  uint64
}

// serverOrdinal returns the ordinal of a message the node numbered (id
// "m<seq>", which a client's id can never take).
func serverOrdinal(id string) (uint64, bool) {
	if len(id) < 2 || id[0] != 'm' || id[1] == '0' {
		return 0, false
	}
	o, err := strconv.ParseUint(id[1:], 10, 64)
	return o, err == nil
}
