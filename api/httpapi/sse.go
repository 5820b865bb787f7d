package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/dispatch"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
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
// slots while it waits).
//
// A malformed query or a refused caller is the HTTP reply itself (400,
// 401, 403, 429): a first poll that does not wait finds out. Then the
// response headers and a first comment go out at once, so a client knows
// the watch is open before any change; every later error is an event
// "error" (an ErrorDetail: code, field, message) that ends the stream, and
// a client should not reconnect after it (an EventSource would: call
// close() on it). A session watch first reads the session, so a session
// that does not exist, or was erased, is such an error event (404
// session_id) instead of a stream that never changes.
func (h *httpAPI) serveSSE(w http.ResponseWriter, r *http.Request, subject string, who *tenancy.Caller) {
	q := r.URL.Query()
	req := &memoryv1.WatchRequest{WaitMs: sseWaitMs}
	for _, p := range []struct {
		name string
		set  func(uint64)
		max  uint64
	}{
		{"from_seq", func(v uint64) { req.FromSeq = v }, 1<<64 - 1},
		{"max_changes", func(v uint64) { req.MaxChanges = uint32(v) }, api.MaxWatchChanges},
	} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n > p.max {
				writeHTTPError(w, &api.Error{Code: 400, Field: p.name, Message: fmt.Sprintf("%q, want an integer 0..%d", v, p.max)})
				return
			}
			p.set(n)
		}
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			writeHTTPError(w, &api.Error{Code: 400, Field: "Last-Event-ID", Message: fmt.Sprintf("%q, want the sequence of the last event received", id)})
			return
		}
		req.FromSeq = n
	}
	switch v := q.Get("decode_values"); v {
	case "", "false":
	case "true":
		req.DecodeValues = true
	default:
		writeHTTPError(w, &api.Error{Code: 400, Field: "decode_values", Message: fmt.Sprintf("%q, want true or false", v)})
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeHTTPError(w, &api.Error{Code: 500, Message: "this connection cannot stream"})
		return
	}
	poll := func(r *http.Request, req *memoryv1.WatchRequest) (dispatch.Reply, error) {
		body, _ := jsonOut.Marshal(req)
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
		defer cancel()
		return h.s.Do(ctx, subject, body, who)
	}
	// A session watch reads the session first: one that does not exist (or
	// was erased) would otherwise be a stream that never changes.
	var gone []byte
	if strings.HasPrefix(subject, "mem.v1.session.") {
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
		rep, err := h.s.Do(ctx, strings.TrimSuffix(subject, ".watch")+".get", nil, who)
		cancel()
		switch {
		case err != nil:
			return // the client went away (or no reply: it reconnects)
		case rep.Code() == http.StatusNotFound:
			gone = rep.Data
		case rep.Code() != 0:
			writeReply(w, rep) // refused (403, 503): the HTTP reply itself
			return
		}
	}
	// A first poll that does not wait: a refusal (403, 429) is the HTTP
	// reply itself, and the headers go out at once.
	first := proto.Clone(req).(*memoryv1.WatchRequest)
	first.WaitMs = 0
	var rep dispatch.Reply
	if gone == nil {
		var err error
		if rep, err = poll(r, first); err != nil {
			return
		}
		if rep.Code() != 0 {
			writeReply(w, rep)
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, ": watching %s from %d\n\n", strings.TrimSuffix(strings.TrimPrefix(subject, "mem.v1."), ".watch"), req.GetFromSeq())
	flusher.Flush()
	fail := func(data []byte) {
		fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
		flusher.Flush()
	}
	if gone != nil {
		fail(gone)
		return
	}
	for {
		out := &memoryv1.WatchReply{}
		if err := jsonIn.Unmarshal(rep.Data, out); err != nil {
			return
		}
		for _, ch := range out.GetChanges() {
			data, err := jsonOut.Marshal(ch)
			if err != nil {
				return
			}
			fmt.Fprintf(w, "id: %d\nevent: change\ndata: %s\n\n", ch.GetSeq(), data)
		}
		if len(out.GetChanges()) > 0 {
			flusher.Flush()
		}
		// The client left, or the service is stopping (its polls answer at
		// once from now on): end the stream; a client reconnects with
		// Last-Event-ID, to another node if this one is gone.
		if r.Context().Err() != nil || stopping(h.s) {
			return
		}
		req.FromSeq = out.GetLastSeq()
		var err error
		if rep, err = poll(r, req); err != nil {
			return // the client went away (or no reply: it reconnects)
		}
		if rep.Code() != 0 {
			fail(rep.Data)
			return
		}
		if out := (&memoryv1.WatchReply{}); jsonIn.Unmarshal(rep.Data, out) == nil && len(out.GetChanges()) == 0 {
			fmt.Fprint(w, ": no change yet\n\n")
			flusher.Flush()
		}
	}
}

// stopping reports whether the service is stopping.
func stopping(s Service) bool {
	select {
	case <-s.Stopping():
		return true
	default:
		return false
	}
}
