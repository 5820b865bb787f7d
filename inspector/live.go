package inspector

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// liveWait is how long one watch poll of a live stream waits for a change;
// between polls the stream sends a comment, so proxies keep it open.
const liveWait = 10 * time.Second

// live streams a session's changes to an open page as Server-Sent Events
// ("change", data {"seq": N}), from the API's watch of the session after
// stream sequence ?from=. The page then reloads its view in place. Each
// open stream holds one of the viewer's watch slots (max_watches) while
// it polls; it ends when the page goes away or the inspector closes.
func (in *Inspector) live(w http.ResponseWriter, r *http.Request, v *viewer) {
	id, err := sessionID(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	from, err := strconv.ParseUint(r.URL.Query().Get("from"), 10, 64)
	if err != nil {
		http.Error(w, "from: want the stream sequence the page shows", http.StatusBadRequest)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(in.ctx, cancel)
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 1000\n: live\n\n")
	fl.Flush()
	for ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, liveWait+in.cfg.ReadTimeout)
		rep := &memoryv1.WatchReply{}
		err := request(pctx, v.nc, "mem.v1.session."+id+".watch",
			&memoryv1.WatchRequest{FromSeq: from, MaxChanges: 64, WaitMs: uint32(liveWait.Milliseconds())}, rep)
		pcancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			_, _ = fmt.Fprintf(w, "event: failed\ndata: %q\n\n", err.Error())
			fl.Flush()
			return
		}
		if n := len(rep.GetChanges()); n > 0 {
			from = rep.GetLastSeq()
			_, _ = fmt.Fprintf(w, "event: change\ndata: {\"seq\": %d, \"changes\": %d}\n\n", from, n)
		} else {
			_, _ = fmt.Fprint(w, ": waiting\n\n")
		}
		fl.Flush()
	}
}
