package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/nats-io/nats.go"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// sseWaitMs is how long each watch poll behind a Server-Sent Events stream
// waits for a change; a comment line keeps the stream alive between polls.
const sseWaitMs = 25000

// serveSSE streams the watch of an aggregate as Server-Sent Events:
// GET /v1/session/<id>/watch?from_seq=N[&max_changes=M][&decode_values=true].
// Each change is an event "change" whose id is its stream sequence and whose
// data is the WatchChange as JSON; a reconnecting EventSource sends
// Last-Event-ID and the stream resumes after it. It is a loop of the same
// long polls as mem.v1.<…>.watch (each holds one of the caller's watch
// slots while it waits); an error ends the stream with an event "error"
// (an ErrorDetail), or, before the first event, is the HTTP reply itself.
func (h *httpAPI) serveSSE(w http.ResponseWriter, r *http.Request, subject string, hdr nats.Header) {
	q := r.URL.Query()
	req := &memoryv1.WatchRequest{WaitMs: sseWaitMs}
	for _, p := range []struct {
		name string
		set  func(uint64)
		max  uint64
	}{
		{"from_seq", func(v uint64) { req.FromSeq = v }, 1<<64 - 1},
		{"max_changes", func(v uint64) { req.MaxChanges = uint32(v) }, MaxWatchChanges},
	} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n > p.max {
				writeHTTPError(w, &Error{Code: 400, Field: p.name, Message: fmt.Sprintf("%q, want an integer 0..%d", v, p.max)})
				return
			}
			p.set(n)
		}
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			writeHTTPError(w, &Error{Code: 400, Field: "Last-Event-ID", Message: fmt.Sprintf("%q, want the sequence of the last event received", id)})
			return
		}
		req.FromSeq = n
	}
	req.DecodeValues = q.Get("decode_values") == "true"
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeHTTPError(w, &Error{Code: 500, Message: "this connection cannot stream"})
		return
	}
	started := false
	for {
		body, _ := encode(req, true)
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
		rep, err := h.s.Do(ctx, subject, body, hdr)
		cancel()
		if err != nil {
			return // the client went away (or no reply: it reconnects)
		}
		if rep.Code() != 0 {
			if !started {
				writeReply(w, rep)
				return
			}
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", rep.Data)
			flusher.Flush()
			return
		}
		out := &memoryv1.WatchReply{}
		if err := jsonIn.Unmarshal(rep.Data, out); err != nil {
			return
		}
		if !started {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, ch := range out.GetChanges() {
			data, err := jsonOut.Marshal(ch)
			if err != nil {
				return
			}
			fmt.Fprintf(w, "id: %d\nevent: change\ndata: %s\n\n", ch.GetSeq(), data)
		}
		if len(out.GetChanges()) == 0 {
			fmt.Fprint(w, ": no change yet\n\n")
		}
		flusher.Flush()
		// The client left, or the service is stopping (its polls answer at
		// once from now on): end the stream; a client reconnects with
		// Last-Event-ID, to another node if this one is gone.
		if r.Context().Err() != nil || h.s.watchCtx.Err() != nil {
			return
		}
		req.FromSeq = out.GetLastSeq()
	}
}
