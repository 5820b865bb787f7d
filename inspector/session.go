package inspector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

type contextPage struct {
	Base
	Info *memoryv1.SessionInfo
	// Status is Info's status by its short name.
	Status  string
	Context contextView
	// LastSeq is the stream sequence the live stream follows from.
	LastSeq uint64
}

// sessionID reads and validates the {id} of the path.
func sessionID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := events.ValidateID("session_id", id); err != nil {
		return "", badInput{"session_id", err.Error()}
	}
	return id, nil
}

// contextPage is the session's context now, as the API answers it, with
// each item's source from the session's state at the same sequence.
func (in *Inspector) contextPage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	info, err := v.c.Get(ctx, id)
	if err != nil {
		return "", nil, err
	}
	cx, err := v.c.Context(ctx, id)
	if err != nil {
		return "", nil, err
	}
	st, err := actors.SessionAt(ctx, in.deps.Log, in.codec, id, actors.Point{Seq: cx.GetSeq()})
	if err != nil {
		return "", nil, fmt.Errorf("inspector: the session's state at seq %d: %w", cx.GetSeq(), err)
	}
	p := contextPage{Base: base(v, id), Info: info, Status: statusName(info.GetStatus()),
		Context: buildContext(cx, st.Snapshot()), LastSeq: cx.GetSeq()}
	p.Tab = "context"
	return "context.html", p, nil
}

type timelinePage struct {
	Base
	Info    *memoryv1.SessionInfo
	Status  string
	Rows    []timelineRow
	Seqs    []uint64
	At      uint64 // the sequence shown
	AtIndex int    // its index in Seqs
	First   uint64
	Last    uint64
	Context contextView
	// Truncated: the session has more batches than the timeline reads.
	Truncated bool
	LastSeq   uint64
	// Outside says why At cannot be shown: it is before the first message
	// the log keeps (the text `replay inspect --at-seq` gives); Earliest
	// is the first point that can.
	Outside  string
	Earliest uint64
}

// timelinePage lists the session's batches in order and shows the context
// at the one the "seq" parameter names (the latest by default): exactly
// what `replay inspect --at-seq` returns (actors.SessionAt).
func (in *Inspector) timelinePage(ctx context.Context, r *http.Request, v *viewer) (string, any, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", nil, err
	}
	info, err := v.c.Get(ctx, id)
	if err != nil {
		return "", nil, err
	}
	p := timelinePage{Base: base(v, id), Info: info, Status: statusName(info.GetStatus())}
	p.Tab = "timeline"
	if p.Rows, p.Truncated, err = in.readBatches(ctx, v, id); err != nil {
		return "", nil, err
	}
	for _, r := range p.Rows {
		p.Seqs = append(p.Seqs, r.Seq)
	}
	if len(p.Seqs) == 0 {
		return "", nil, fmt.Errorf("inspector: session %s has no batch in the log", id)
	}
	p.First, p.Last, p.LastSeq = p.Seqs[0], p.Seqs[len(p.Seqs)-1], p.Seqs[len(p.Seqs)-1]
	p.At = p.Last
	if s := r.URL.Query().Get("seq"); s != "" {
		if p.At, err = strconv.ParseUint(s, 10, 64); err != nil || p.At == 0 {
			return "", nil, badInput{"seq", fmt.Sprintf("%q is not a stream sequence (a whole number > 0)", s)}
		}
	}
	for i, s := range p.Seqs {
		if s <= p.At {
			p.AtIndex = i
		}
	}
	for i := range p.Rows {
		p.Rows[i].Current = p.Rows[i].Seq == p.Seqs[p.AtIndex]
		p.Rows[i].Future = p.Rows[i].Seq > p.At
	}
	if err := in.checkWindow(ctx, p.At); err != nil {
		var o *outsideWindow
		if !errors.As(err, &o) {
			return "", nil, err
		}
		p.Outside, p.Earliest = o.Error(), max(o.First, p.First)
		return "timeline.html", p, nil
	}
	st, err := actors.SessionAt(ctx, in.deps.Log, in.codec, id, actors.Point{Seq: p.At})
	if err != nil {
		var ny *actors.NotYetError
		if errors.As(err, &ny) {
			return "", nil, badInput{"seq", ny.Error()}
		}
		return "", nil, err
	}
	cx, err := actors.ContextAt(ctx, in.deps.Log, in.deps.Reader, in.codec, st)
	if err != nil {
		return "", nil, err
	}
	p.Context = buildContext(cx, st.Snapshot())
	return "timeline.html", p, nil
}

// readBatches reads the session's batches through the API's watch (which
// checks the viewer may read the session), from the first, up to
// MaxTimeline of them, as rows. Each reply is described as it comes and
// dropped: the batches themselves (every message's content) are not all
// held at once for a page that shows a line of each.
func (in *Inspector) readBatches(ctx context.Context, v *viewer, id string) ([]timelineRow, bool, error) {
	var out []timelineRow
	var from uint64
	for len(out) < in.cfg.MaxTimeline {
		rep := &memoryv1.WatchReply{}
		if err := request(ctx, v.nc, "mem.v1.session."+id+".watch", &memoryv1.WatchRequest{FromSeq: from, MaxChanges: 256}, rep); err != nil {
			return nil, false, err
		}
		if len(rep.GetChanges()) == 0 {
			return out, false, nil
		}
		for _, ch := range rep.GetChanges() {
			out = append(out, describeBatch(ch.GetSeq(), ch.GetBatch()))
		}
		from = rep.GetLastSeq()
	}
	return out[:in.cfg.MaxTimeline], true, nil
}

// atJSON answers {"context": ContextReply, "snapshot": SessionSnapshot} at
// ?seq= (the latest without), as `replay inspect --json --at-seq` prints.
func (in *Inspector) atJSON(w http.ResponseWriter, r *http.Request, v *viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), in.cfg.ReadTimeout)
	defer cancel()
	fail := func(err error) { http.Error(w, err.Error(), statusOf(err)) }
	id, err := sessionID(r)
	if err != nil {
		fail(err)
		return
	}
	var at uint64
	if s := r.URL.Query().Get("seq"); s != "" {
		if at, err = strconv.ParseUint(s, 10, 64); err != nil {
			fail(badInput{"seq", fmt.Sprintf("%q is not a whole number", s)})
			return
		}
	}
	if _, err := v.c.Get(ctx, id); err != nil { // may the viewer read it?
		fail(err)
		return
	}
	if err := in.checkWindow(ctx, at); err != nil {
		fail(err)
		return
	}
	st, err := actors.SessionAt(ctx, in.deps.Log, in.codec, id, actors.Point{Seq: at})
	if err != nil {
		var ny *actors.NotYetError
		if errors.As(err, &ny) {
			err = badInput{"seq", ny.Error()}
		}
		fail(err)
		return
	}
	reply, err := actors.ContextAt(ctx, in.deps.Log, in.deps.Reader, in.codec, st)
	if err != nil {
		fail(err)
		return
	}
	mo := protojson.MarshalOptions{UseProtoNames: true}
	cx, err1 := mo.Marshal(reply)
	snap, err2 := mo.Marshal(st.Snapshot())
	if err := errors.Join(err1, err2); err != nil {
		fail(err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(struct {
		Context  json.RawMessage `json:"context"`
		Snapshot json.RawMessage `json:"snapshot"`
	}{cx, snap})
}

// timeOf formats a Unix nanosecond time for the page ("" for 0).
func timeOf(ns int64) string {
	if ns == 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000")
}
