package inspector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/actors"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// timelinePageSize is the batches on one page of the timeline: a page of
// a 5,000-turn session stays a few thousand DOM nodes.
const timelinePageSize = 200

type kindChoice struct {
	Name, Label, Hint string
	Count             int
	On                bool
}

type timelinePage struct {
	Base
	Info   *memoryv1.SessionInfo
	Status string
	Rows   []timelineRow
	// Seqs are every batch of the session (the time-travel slider).
	Seqs        []uint64
	First, Last uint64
	Truncated   bool
	LastSeq     uint64
	Kind        string // the filter ("" all)
	Kinds       []kindChoice
	Page, Pages int
	Total       int // batches matching the filter
	// FirstRow and LastRow number the page's rows within Total (1-based).
	FirstRow, LastRow int
	At                atView
}

// atView is the context at one point of time travel, or why it cannot be
// shown (Outside, with the nearest point that can: Earliest).
type atView struct {
	Asked   uint64 // the sequence asked for
	Shown   uint64 // the batch whose state is shown (the last at or before Asked)
	Index   int    // Shown's index among the session's batches
	Context contextView
	// Outside says why Asked cannot be shown; Earliest (or Latest) is the
	// nearest point that can.
	Outside          string
	Earliest, Latest uint64
	Code             int
	Lazy             bool // the context is fetched by the page after it loads
	SessionID        string
	// Last is the session's latest batch (what the panel compares with).
	Last uint64
}

// timelinePage lists one page of the session's batches (the page holding
// the point shown by default, newest last) with a filter by kind, and the
// context at the point the "seq" parameter names (the latest by default),
// exactly what `replay inspect --at-seq` returns (actors.SessionAt). The
// context is fetched by the page after it loads (the replay of a long
// session takes far longer than the page of rows), or rendered in place
// when the page is asked with ?static=1.
func (in *Inspector) timelinePage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	q := r.URL.Query()
	kind := q.Get("kind")
	if kind != "" && !validKind(kind) {
		return "", nil, badInput{"kind", fmt.Sprintf("%q: want one of the legend's kinds", kind)}
	}
	info, refs, trunc, _, err := in.index(ctx, v, id)
	if err != nil {
		return "", nil, err
	}
	p := timelinePage{Base: sessionBase(v, info), Info: info, Status: statusName(info.GetStatus()), Kind: kind}
	p.Tab = "timeline"
	if len(refs) == 0 {
		return "", nil, fmt.Errorf("inspector: session %s has no batch in the log", id)
	}
	p.Truncated = trunc
	p.Seqs = make([]uint64, len(refs))
	counts := make([]int, len(kinds))
	var match []batchRef
	for i, ref := range refs {
		p.Seqs[i] = ref.Seq
		for j := range kinds {
			if ref.Kinds&(1<<j) != 0 {
				counts[j]++
			}
		}
		if p.Kind == "" || ref.Kinds&kindBit(p.Kind) != 0 {
			match = append(match, ref)
		}
	}
	for j, k := range kinds {
		p.Kinds = append(p.Kinds, kindChoice{Name: k.Name, Label: k.Label, Hint: k.Hint, Count: counts[j], On: k.Name == p.Kind})
	}
	p.First, p.Last, p.LastSeq = p.Seqs[0], p.Seqs[len(p.Seqs)-1], p.Seqs[len(p.Seqs)-1]
	asked := p.Last
	if s := q.Get("seq"); s != "" {
		if asked, err = strconv.ParseUint(s, 10, 64); err != nil || asked == 0 {
			return "", nil, badInput{"seq", fmt.Sprintf("%q is not a stream sequence (a whole number > 0)", s)}
		}
	}
	// Pages are cut from the newest: the latest page is always full, the
	// first holds what is left. The default page holds the point shown
	// (the latest by default).
	n := len(match)
	p.Total = n
	p.Pages = max(1, (n+timelinePageSize-1)/timelinePageSize)
	if i := sort.Search(n, func(i int) bool { return match[i].Seq > asked }); i == 0 {
		p.Page = 1
	} else {
		p.Page = p.Pages - (n-i)/timelinePageSize
	}
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > p.Pages {
			return "", nil, badInput{"page", fmt.Sprintf("%q: want 1..%d", s, p.Pages)}
		}
		p.Page = n
	}
	hi := n - (p.Pages-p.Page)*timelinePageSize
	lo := max(0, hi-timelinePageSize)
	p.FirstRow, p.LastRow = min(lo+1, hi), hi
	if hi > lo {
		if p.Rows, err = in.rows(ctx, v, id, match[lo:hi]); err != nil {
			return "", nil, err
		}
	}
	if p.At, err = in.locate(ctx, id, p.Seqs, asked); err != nil {
		return "", nil, err
	}
	if q.Get("static") == "1" && p.At.Outside == "" {
		if p.At, err = in.contextAt(ctx, v, id, p.Seqs, asked, false); err != nil {
			return "", nil, err
		}
		compactAt(&p.At, r)
	} else if p.At.Outside == "" {
		p.At.Lazy = true
	}
	markRows(p.Rows, p.At)
	if p.At.Code != 0 {
		return "timeline.html", withCode{p.At.Code, p}, nil
	}
	return "timeline.html", p, nil
}

// markRows marks the row shown and the rows after it.
func markRows(rows []timelineRow, at atView) {
	for i := range rows {
		rows[i].Current = rows[i].Seq == at.Shown
		rows[i].Future = at.Shown > 0 && rows[i].Seq > at.Shown
	}
}

// rows reads and describes the batches of refs (in log order), reading
// the log from the first to the last and keeping only those.
func (in *Inspector) rows(ctx context.Context, v *viewer, id string, refs []batchRef) ([]timelineRow, error) {
	want := make(map[uint64]bool, len(refs))
	for _, r := range refs {
		want[r.Seq] = true
	}
	out := make([]timelineRow, 0, len(refs))
	err := in.readBatches(ctx, v, id, refs[0].Seq-1, refs[len(refs)-1].Seq, func(ch *memoryv1.WatchChange) bool {
		if want[ch.GetSeq()] {
			out = append(out, describeBatch(ch.GetSeq(), ch.GetBatch()))
		}
		return true
	})
	return out, err
}

// locate finds the batch whose state time travel shows for asked, or says
// why none is: before the session's first batch, after its last (never
// shown as another point under asked's number), or before the log's
// time-travel window (checked by contextAt).
func (in *Inspector) locate(ctx context.Context, id string, seqs []uint64, asked uint64) (atView, error) {
	first, last := seqs[0], seqs[len(seqs)-1]
	at := atView{Asked: asked, SessionID: id, Last: last}
	if err := in.checkWindow(ctx, id, min(asked, last)); err != nil {
		var o *outsideWindow
		if !errors.As(err, &o) {
			return at, err
		}
		at.Outside, at.Earliest, at.Code = o.Error(), max(o.First, first), http.StatusNotFound
		return at, nil
	}
	switch {
	case asked < first:
		at.Outside = fmt.Sprintf("seq %d is before this session began: its first batch is seq %d.", asked, first)
		at.Earliest, at.Code = first, http.StatusNotFound
		return at, nil
	case asked > last:
		at.Outside = fmt.Sprintf("seq %d is after this session's latest batch, seq %d: nothing happened in it since.", asked, last)
		at.Latest, at.Code = last, http.StatusNotFound
		return at, nil
	}
	at.Index = sort.Search(len(seqs), func(i int) bool { return seqs[i] > asked }) - 1
	at.Shown = seqs[at.Index]
	return at, nil
}

// contextAt is locate with the context at the point: the latest point
// from the live actor (the API's context, liveSources), an earlier one
// (or the latest, with replay) replayed from the log (time travel).
func (in *Inspector) contextAt(ctx context.Context, v *viewer, id string, seqs []uint64, asked uint64, replay bool) (atView, error) {
	at, err := in.locate(ctx, id, seqs, asked)
	if err != nil || at.Outside != "" {
		return at, err
	}
	if at.Index == len(seqs)-1 && !replay {
		cx, err := v.c.Context(ctx, id)
		if err != nil {
			return at, err
		}
		if cx.GetSeq() == at.Shown { // else the session moved on: time travel
			src, err := in.liveSources(ctx, v, id, cx)
			if err != nil {
				return at, err
			}
			at.Context = buildContext(cx, src)
			return at, nil
		}
	}
	st, err := actors.SessionAt(ctx, in.deps.Log, in.codec, id, actors.Point{Seq: at.Shown})
	if err != nil {
		var ny *actors.NotYetError
		if errors.As(err, &ny) {
			at.Outside, at.Earliest, at.Code = ny.Error(), seqs[0], http.StatusNotFound
			return at, nil
		}
		return at, err
	}
	cx, err := actors.ContextAt(ctx, in.deps.Log, in.deps.Reader, in.codec, st)
	if err != nil {
		return at, err
	}
	at.Context = buildContext(cx, newSources(st.Snapshot()))
	return at, nil
}

// compactAt makes the panel's context compact unless the whole was asked.
func compactAt(at *atView, r *http.Request) {
	if r.URL.Query().Get("all") != "1" && at.Outside == "" {
		at.Context.compact(fmt.Sprintf("/ui/s/%s/at?seq=%d&all=1", at.SessionID, at.Asked))
	}
}

// atPart answers the context at ?seq= as the timeline's panel (an HTML
// fragment the page swaps in: moving the slider reads no row again).
// ?replay=1 replays the log even for the latest point (which is
// otherwise read from the live session): the two must agree.
func (in *Inspector) atPart(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	_, seqs, err := in.batchSeqs(ctx, v, id)
	if err != nil {
		return "", nil, err
	}
	asked := seqs[len(seqs)-1]
	if s := r.URL.Query().Get("seq"); s != "" {
		if asked, err = strconv.ParseUint(s, 10, 64); err != nil || asked == 0 {
			return "", nil, badInput{"seq", fmt.Sprintf("%q is not a stream sequence (a whole number > 0)", s)}
		}
	}
	at, err := in.contextAt(ctx, v, id, seqs, asked, r.URL.Query().Get("replay") == "1")
	if err != nil {
		return "", nil, err
	}
	compactAt(&at, r)
	if at.Code != 0 {
		return "atview", withCode{at.Code, at}, nil
	}
	return "atview", at, nil
}

// rowsPart answers the batches after stream sequence ?after= of kind
// ?kind= as timeline rows (an HTML fragment): a live timeline appends
// them rather than reloading.
func (in *Inspector) rowsPart(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	q := r.URL.Query()
	after, err := strconv.ParseUint(q.Get("after"), 10, 64)
	if err != nil {
		return "", nil, badInput{"after", "want the stream sequence of the last row shown"}
	}
	kind := q.Get("kind")
	if kind != "" && !validKind(kind) {
		return "", nil, badInput{"kind", fmt.Sprintf("%q: want one of the legend's kinds", kind)}
	}
	_, refs, _, _, err := in.index(ctx, v, id)
	if err != nil {
		return "", nil, err
	}
	i := sort.Search(len(refs), func(i int) bool { return refs[i].Seq > after })
	newer := refs[i:]
	part := rowsFragment{Last: after}
	if len(newer) > 0 {
		part.Last = newer[len(newer)-1].Seq
	}
	var match []batchRef
	for _, ref := range newer {
		part.Seqs = append(part.Seqs, ref.Seq)
		if kind == "" || ref.Kinds&kindBit(kind) != 0 {
			match = append(match, ref)
		}
	}
	if len(match) > timelinePageSize { // too many to append: the page reloads
		part.TooMany = true
		return "rows", part, nil
	}
	if len(match) > 0 {
		if part.Rows, err = in.rows(ctx, v, id, match); err != nil {
			return "", nil, err
		}
	}
	return "rows", part, nil
}

type rowsFragment struct {
	Rows    []timelineRow
	Seqs    []uint64 // every new batch (the slider's new points)
	Last    uint64
	TooMany bool
}

func joinSeqs(s []uint64) string {
	var b strings.Builder
	for i, n := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(n, 10))
	}
	return b.String()
}
