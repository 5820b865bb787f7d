// Package lastwrite remembers the stream sequences of the latest writes
// served by this node: of each session, and of each caller to its
// sessions and scopes. The context assembler waits (bounded) until the
// projection has applied them, so a search reads what its caller just
// wrote. Every table is bounded and safe for concurrent use; the zero
// value of each is ready.
package lastwrite

import (
	"slices"
	"sync"

	"github.com/agentmem/agentmem/tenancy"
)

// MaxSessions bounds the sessions Sessions remembers: past it, every
// session is forgotten at once (a forgotten session's search then does not
// wait).
const MaxSessions = 1 << 16

// Commands are the stream sequence of a session's last command served
// here, and how many it served.
type Commands struct {
	Last uint64
	N    int
}

// Sessions remembers each session's Commands.
type Sessions struct {
	mu  sync.Mutex
	seq map[string]Commands
}

// Note records a command to session id stored at seq.
func (w *Sessions) Note(id string, seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seq == nil || len(w.seq) >= MaxSessions {
		w.seq = map[string]Commands{}
	}
	c := w.seq[id]
	c.Last = max(c.Last, seq)
	c.N++
	w.seq[id] = c
}

// Get returns session id's Commands (zero: none remembered).
func (w *Sessions) Get(id string) Commands {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq[id]
}

// RecentSessions is how many sessions Recent remembers per caller.
const RecentSessions = 8

// Recent remembers, per caller, the stream sequence of its latest command
// to each of its last RecentSessions sessions: a new session's recall
// waits for what its caller just wrote elsewhere (a sitting just
// imported, just terminated).
type Recent struct {
	mu sync.Mutex
	m  map[*tenancy.Caller][]sessionSeq // per caller, newest first
}

type sessionSeq struct {
	id  string
	seq uint64
}

// Note records who's command to session id stored at seq.
func (w *Recent) Note(who *tenancy.Caller, id string, seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[*tenancy.Caller][]sessionSeq{}
	}
	l := slices.DeleteFunc(w.m[who], func(x sessionSeq) bool { return x.id == id })
	l = slices.Insert(l, 0, sessionSeq{id, seq})
	w.m[who] = l[:min(len(l), RecentSessions)]
}

// Others is the latest sequence of who's commands to sessions other than
// id.
func (w *Recent) Others(who *tenancy.Caller, id string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var seq uint64
	for _, x := range w.m[who] {
		if x.id != id {
			seq = max(seq, x.seq)
		}
	}
	return seq
}

// Callers remembers the stream sequence of each caller's last scope write
// (one entry per principal: the node's configured callers).
type Callers struct {
	mu  sync.Mutex
	seq map[*tenancy.Caller]uint64
}

// Note records a write of who stored at seq.
func (w *Callers) Note(who *tenancy.Caller, seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seq == nil {
		w.seq = map[*tenancy.Caller]uint64{}
	}
	w.seq[who] = max(w.seq[who], seq)
}

// Last is the sequence of who's last write (0: none).
func (w *Callers) Last(who *tenancy.Caller) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq[who]
}
