package inspector

import (
	"context"
	"slices"

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
		return len(src.msgs) < len(want)
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
		if o > summarized || len(src.msgs) == len(want) {
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
