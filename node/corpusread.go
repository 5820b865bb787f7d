package node

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/projections"
)

// Split projections: each node projects only the corpus partitions it
// owns (projections.Store.SetCorpusPartition), and corpusReadModel routes
// each read to the partition holding what it reads. A read of a session
// goes to its corpus's partition (a local file's SessionCorpus: every
// partial file knows every session's corpus), a read of a user or of a
// user's scope or data to the user's, a session scope to its session's,
// any other scope or owner to the shared corpus "". A partition held here
// is read in place, as readModel reads; another is asked of its owner
// over NATS (corpusSubject, answered by serveCorpus). A listing by agent
// or of everyone, a count by agent and the entries with a metadata value
// gather every partition (corpusgather.go).
//
// Every partial file reads the whole log, so a local file's checkpoints
// are this node's position: each routed read carries it, and the owner
// waits (at most corpusWaitBound) until its file reached it before it
// reads, so that a read through this node after this node saw a write
// sees it whichever node answers.

// corpusFile is one local partition file: its store and its projector.
type corpusFile struct {
	s *projections.Store
	p *projections.Projector
}

// corpusLocal is what the router needs of the ownership manager.
type corpusLocal interface {
	// File is the local file of corpus partition c, once it caught up (ok
	// false: not served here).
	File(c int) (corpusFile, bool)
	// Any is any local file (ok false: none), to read routes and positions
	// from.
	Any() (corpusFile, bool)
}

// corpusReadModel serves the read model's interfaces over corpus
// partitions, some local, the others asked of their owners.
type corpusReadModel struct {
	parts   int // C
	local   corpusLocal
	nc      *nats.Conn      // the node's internal connection
	timeout time.Duration   // one request to an owner
	marks   *partitionMarks // nil with the log in one stream
	logger  *slog.Logger
}

var (
	_ api.ReadModel          = (*corpusReadModel)(nil)
	_ api.EntrySearcher      = (*corpusReadModel)(nil)
	_ erasure.ReadModel      = (*corpusReadModel)(nil)
	_ consistency.Projection = (*corpusReadModel)(nil)
	_ actors.CommandIndex    = (*corpusReadModel)(nil)
)

// corpusWaitBound bounds an owner's wait for the caller's position (as
// MinSeqWait bounds a min_seq wait).
const corpusWaitBound = 2 * time.Second

// corpusSubject is the subject the owner of corpus partition c answers on
// (queue group corpusQueue).
func corpusSubject(c int) string { return fmt.Sprintf("%scorpus.%d", internalPrefix, c) }

const corpusQueue = "corpus"

// errNoCorpusFile answers what needs a local file on a node holding none.
var errNoCorpusFile = &api.Error{Code: 503, Message: "no corpus partition file on this node yet; retry"}

// route is where a read goes: partition part, or, with anyLocal, any local
// file (a read of what no store holds, answered as any store answers it:
// an unknown session, a malformed scope).
type route struct {
	part     int
	anyLocal bool
}

// corpusRoute is the route of a corpus.
func (r *corpusReadModel) corpusRoute(corpus string) route {
	return route{part: projections.CorpusPartition(corpus, r.parts)}
}

// sessionRoute is the route of session id's corpus; an unknown session
// is read from any local file (the same "not found" as a whole store's).
func (r *corpusReadModel) sessionRoute(id string) (route, error) {
	f, ok := r.local.Any()
	if !ok {
		return route{}, errNoCorpusFile
	}
	corpus, known, err := f.s.SessionCorpus(id)
	if err != nil {
		return route{}, mapErr(err)
	}
	if !known {
		return route{anyLocal: true}, nil
	}
	return r.corpusRoute(corpus), nil
}

// scopeRoute is the route of a scope by its aggregate kind: a user's is
// the user's corpus, a session's its session's, any other the shared one.
func (r *corpusReadModel) scopeRoute(aggKind, id string) (route, error) {
	switch aggKind {
	case string(sharedmem.KindUser):
		return r.corpusRoute(id), nil
	case projections.ScopeLogKind(sharedmem.KindSession):
		return r.sessionRoute(id)
	}
	return r.corpusRoute(""), nil
}

// scopeNameRoute is scopeRoute of a scope name ("user:<id>").
func (r *corpusReadModel) scopeNameRoute(scope string) (route, error) {
	kind, id, err := sharedmem.ParseScopeName(scope)
	if err != nil {
		return route{anyLocal: true}, nil
	}
	return r.scopeRoute(projections.ScopeLogKind(kind), id)
}

// ownerRoute is the route of a large-data owner ("session:<id>",
// "user:<id>", else the shared corpus).
func (r *corpusReadModel) ownerRoute(owner string) (route, error) {
	kind, id, _ := strings.Cut(owner, ":")
	switch kind {
	case "session":
		return r.sessionRoute(id)
	case "user":
		return r.corpusRoute(id), nil
	}
	return r.corpusRoute(""), nil
}

// files are the local files (partition order).
func (r *corpusReadModel) files() []corpusFile {
	var out []corpusFile
	for c := range r.parts {
		if f, ok := r.local.File(c); ok {
			out = append(out, f)
		}
	}
	return out
}

// position is this node's position: per log partition, the highest
// checkpoint of its local files (nil with none).
func (r *corpusReadModel) position() []uint64 {
	var pos []uint64
	for _, f := range r.files() {
		k := f.p.Partitions()
		if pos == nil {
			pos = make([]uint64, k)
		}
		for i := range min(k, len(pos)) {
			pos[i] = max(pos[i], f.p.AppliedSeqOf(i))
		}
	}
	return pos
}

// local is the readModel of a local file.
func (r *corpusReadModel) readModelOf(f corpusFile) readModel {
	// No query embedder: with split projections search is BM25 only.
	return readModel{p: f.p, s: f.s, logger: r.logger, marks: r.marks}
}
