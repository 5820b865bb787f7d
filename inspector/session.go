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

// contextPage is the session's context now, as the API answers it (the
// live actor), with each item's source and why from the session's index
// and the batches of its verbatim messages (liveSources): no replay.
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
	src, err := in.liveSources(ctx, v, id, cx)
	if err != nil {
		return "", nil, fmt.Errorf("inspector: the sources of the context at seq %d: %w", cx.GetSeq(), err)
	}
	p := contextPage{Base: sessionBase(v, info), Info: info, Status: statusName(info.GetStatus()),
		Context: buildContext(cx, src), LastSeq: cx.GetSeq()}
	p.Tab = "context"
	return "context.html", p, nil
}

// atJSON answers {"context": ContextReply, "snapshot": SessionSnapshot} at
// ?seq= (the latest without), as `replay inspect --json --at-seq` prints.
func (in *Inspector) atJSON(w http.ResponseWriter, r *http.Request, v *viewer) {
	ctx, cancel := context.WithTimeout(r.Context(), in.cfg.ReadTimeout)
	defer cancel()
	fail := func(err error) { in.fail(w, r, v, err) }
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
	if err := in.checkWindow(ctx, id, at); err != nil {
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
