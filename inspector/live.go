package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Watcher reads a session's changes after a stream sequence, waiting up
// to wait for a first one (the node's watch, the one the API's watch
// endpoint serves). With it the inspector's live updates read the log
// directly, after the API said the viewer may read the session, and hold
// none of the viewer's watch slots (max_watches): the single-user node's
// agents share that caller with the inspector, and sixteen open pages
// used to leave them a 429.
type Watcher interface {
	Watch(ctx context.Context, subject string, fromSeq uint64, maxChanges int, wait time.Duration) ([]*memoryv1.WatchChange, uint64, error)
}

// liveWait is how long one watch poll of a live stream waits for a change;
// between polls the stream sends a comment, so proxies keep it open, and
// rechecks that the viewer may still read the session.
const liveWait = 10 * time.Second

// maxLiveSessions bounds the sessions one live stream follows.
const maxLiveSessions = 16

// follow is one session a live stream follows, from a stream sequence.
type follow struct {
	id   string
	from uint64
}

// live streams sessions' changes to open pages as Server-Sent Events:
// "change" with data {"session": id, "seq": N, "changes": n}; "failed"
// with data {"session": id, "error": text} when a session can no longer be
// followed. /ui/live?s=ID:FROM&s=… follows several sessions on one
// connection: the pages of one browser share it (static/live-worker.js), so
// a seventh tab does not wait for one of the browser's six connections to
// the host. /ui/s/{id}/live?from=N follows one.
//
// Each followed session takes one of the inspector's own live slots
// (Config.MaxLive; 503 when all are taken: the page retries and says it is
// reconnecting), never one of the viewer's API watch slots when the node
// gave its Watcher.
func (in *Inspector) live(w http.ResponseWriter, r *http.Request, v *viewer) {
	var follows []follow
	if id := r.PathValue("id"); id != "" {
		sid, err := sessionID(r)
		if err != nil {
			in.fail(w, r, v, err)
			return
		}
		from, err := strconv.ParseUint(r.URL.Query().Get("from"), 10, 64)
		if err != nil {
			in.fail(w, r, v, badInput{"from", "want the stream sequence the page shows"})
			return
		}
		follows = append(follows, follow{sid, from})
	} else {
		for _, s := range r.URL.Query()["s"] {
			id, n, _ := strings.Cut(s, ":")
			from, err := strconv.ParseUint(n, 10, 64)
			if err != nil || events.ValidateID("session_id", id) != nil {
				in.fail(w, r, v, badInput{"s", fmt.Sprintf("%q: want session_id:stream_sequence", s)})
				return
			}
			follows = append(follows, follow{id, from})
		}
		if len(follows) == 0 || len(follows) > maxLiveSessions {
			in.fail(w, r, v, badInput{"s", fmt.Sprintf("want 1..%d sessions to follow", maxLiveSessions)})
			return
		}
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		in.errorPage(w, v, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	release, ok := in.liveSlots.take(len(follows))
	if !ok {
		w.Header().Set("Retry-After", "2")
		in.errorPage(w, v, http.StatusServiceUnavailable, fmt.Sprintf("The inspector follows %d sessions live, the most it may (live streams are bounded apart from the agents' watches): retry shortly.", in.liveSlots.size))
		return
	}
	defer release()
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

	out := make(chan string, 16)
	var wg sync.WaitGroup
	for _, f := range follows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.followSession(ctx, v, f, out)
		}()
	}
	go func() { wg.Wait(); close(out) }()
	tick := time.NewTicker(liveWait)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-out:
			if !ok {
				return
			}
			_, _ = fmt.Fprint(w, ev)
		case <-tick.C:
			_, _ = fmt.Fprint(w, ": waiting\n\n")
		case <-ctx.Done():
			return
		}
		fl.Flush()
	}
}

// followSession sends f's changes to out until ctx ends or the session
// can no longer be read (then a "failed" event).
func (in *Inspector) followSession(ctx context.Context, v *viewer, f follow, out chan<- string) {
	send := func(ev string, data any) bool {
		b, _ := json.Marshal(data)
		select {
		case out <- fmt.Sprintf("event: %s\ndata: %s\n\n", ev, b):
			return true
		case <-ctx.Done():
			return false
		}
	}
	fail := func(err error) {
		send("failed", map[string]any{"session": f.id, "error": err.Error(), "code": statusOf(err)})
	}
	for ctx.Err() == nil {
		// May the viewer (still) read it? The API answers, with its rights.
		gctx, gcancel := context.WithTimeout(ctx, in.cfg.ReadTimeout)
		_, err := v.c.Get(gctx, f.id)
		gcancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fail(err)
			return
		}
		var changes []*memoryv1.WatchChange
		pctx, pcancel := context.WithTimeout(ctx, liveWait+in.cfg.ReadTimeout)
		if in.deps.Watcher != nil {
			changes, _, err = in.deps.Watcher.Watch(pctx, events.SessionSubject(f.id), f.from, 64, liveWait)
		} else { // no Watcher: the API's watch, which holds a watch slot
			rep := &memoryv1.WatchReply{}
			err = request(pctx, v.nc, "mem.v1.session."+f.id+".watch",
				&memoryv1.WatchRequest{FromSeq: f.from, MaxChanges: 64, WaitMs: uint32(liveWait.Milliseconds())}, rep)
			changes = rep.GetChanges()
		}
		pcancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fail(err)
			return
		}
		if n := len(changes); n > 0 {
			f.from = changes[n-1].GetSeq()
			if !send("change", map[string]any{"session": f.id, "seq": f.from, "changes": n}) {
				return
			}
		}
	}
}

// slots is a counting semaphore that takes several at once or none.
type slots struct {
	mu         sync.Mutex
	used, size int
}

func (s *slots) take(n int) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used+n > s.size {
		return nil, false
	}
	s.used += n
	return func() { s.mu.Lock(); s.used -= n; s.mu.Unlock() }, true
}
