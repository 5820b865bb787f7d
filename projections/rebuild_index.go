package projections

import (
	"context"
	"strings"

	"golang.org/x/sync/semaphore"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// chunkItem is what Rebuild's index stage (indexChunks) sends the writer:
// records to apply in the current transaction, or the end of the
// transaction. The records of a transaction come as soon as the stage has
// gone through them, so the writer applies them while the stage reads on;
// the postings the stage grouped come with the end.
type chunkItem struct {
	part  int // the log partition of the transaction (one per transaction)
	recs  []Decoded
	bytes int64 // the encoded size of recs, held in the queue's gate until received
	prep  map[*memoryv1.Message]*preparedMessage
	// ahead: the stage buffers the postings of recs' messages (the writer
	// writes their documents only; writer.preIndexed).
	ahead bool

	end bool
	pre *preIndexed // at the end of a transaction indexed ahead
}

// chunkQueue carries the index stage's items to the writer. It is bounded
// by the encoded bytes of the records it holds (rebuildQueueBytes), not by
// a number of items: the stage reads and groups the next transaction while
// the writer flushes and commits the current one, up to that many bytes
// ahead, whatever the size of the records.
type chunkQueue struct {
	ch   chan chunkItem
	gate *semaphore.Weighted // nil: bounded by ch's capacity only
	max  int64
}

// newChunkQueue returns a queue holding records of at most maxBytes
// encoded bytes (a record larger than that passes alone).
func newChunkQueue(maxBytes int64) *chunkQueue {
	return &chunkQueue{ch: make(chan chunkItem, rebuildQueueItems), gate: semaphore.NewWeighted(maxBytes), max: maxBytes}
}

// send queues it, waiting for room; false when ctx ended first.
func (q *chunkQueue) send(ctx context.Context, it chunkItem) bool {
	it.bytes = min(it.bytes, q.max)
	if q.gate != nil && it.bytes > 0 {
		if q.gate.Acquire(ctx, it.bytes) != nil {
			return false
		}
	}
	select {
	case q.ch <- it:
		return true
	case <-ctx.Done():
		if q.gate != nil && it.bytes > 0 {
			q.gate.Release(it.bytes)
		}
		return false
	}
}

// next returns the next item and frees its room; false once the queue is
// closed and drained.
func (q *chunkQueue) next() (chunkItem, bool) {
	it, ok := <-q.ch
	if ok && q.gate != nil && it.bytes > 0 {
		q.gate.Release(it.bytes)
	}
	return it, ok
}

// drain receives every item until the queue is closed (the writer stopped
// first: the stage then ends, on its context).
func (q *chunkQueue) drain() {
	for {
		if _, ok := q.next(); !ok {
			return
		}
	}
}

// preIndexed is what the writer's index would buffer over a transaction
// (writer.pending, writer.statsDelta), built by the index stage in log
// order while the writer applies the records. Doc ids are assigned ahead
// (bm25_docs' sequence is advanced by nothing but message and summary
// documents, one per document with a term, in log order); the writer checks
// each against the id it gets (writer.index), so a disagreement fails the
// rebuild instead of writing wrong postings.
type preIndexed struct {
	pending bm25Pending // grouped and sorted at the end
	stats   map[string][2]uint64
}

// indexStage is the state of Rebuild's index stage across transactions.
type indexStage struct {
	users   map[string]string // session id → user id, from the SessionCreated read so far
	nextDoc uint64            // the doc id of the next document
}

// indexChunks is Rebuild's third stage: it takes the prepared batches of
// in (log order), cuts them into transactions (the rebuildChunk* bounds),
// forwards their records to the writer and groups the postings of their
// messages ahead of it. A record whose effect on the index the stage does
// not follow (removals, scope and data records, archived summaries, a
// session it did not see created) ends a transaction indexed ahead; it and
// the rest of its transaction are indexed by the writer as ApplyBatch does
// (the stage still counts their documents, so that later transactions get
// the right doc ids). A transaction holds the records of one log partition:
// the batches of the next one start a new transaction. The queue returned
// is closed once in is drained; on ctx's end the stage drains in and stops.
//
// firstDoc is the doc id the store gives its next document (a store that
// holds other partitions already has documents).
func indexChunks(ctx context.Context, in <-chan *readBatch, firstDoc uint64) *chunkQueue {
	out := newChunkQueue(rebuildQueueBytes)
	go func() {
		defer close(out.ch)
		st := indexStage{users: make(map[string]string), nextDoc: firstDoc}
		send := func(it chunkItem) bool { return out.send(ctx, it) }
		open := false       // a transaction is open
		var pre *preIndexed // its postings, when indexed ahead
		var records, size, postings int
		part := -1 // the log partition of the open transaction
		end := func() bool {
			if !open {
				return true
			}
			if pre != nil {
				pre.pending.group()
			}
			ok := send(chunkItem{part: part, end: true, pre: pre})
			open, pre, records, size, postings = false, nil, 0, 0, 0
			return ok
		}
		for b := range in {
			if ctx.Err() != nil {
				continue // drain: the reader stops on ctx too
			}
			<-b.ready
			if b.part != part {
				// A transaction holds one partition's records (its
				// checkpoint); sessions are per partition.
				if !end() {
					continue
				}
				part = b.part
				clear(st.users)
			}
			from := 0 // b.recs[from:] not sent yet
			for i := range b.recs {
				r := &b.recs[i]
				if !open {
					open = true
					if st.ahead(r, b.prep) {
						pre = &preIndexed{stats: make(map[string][2]uint64)}
					}
				} else if pre != nil && !st.ahead(r, b.prep) {
					// The transaction indexed ahead ends before r; the next
					// one is the writer's.
					if i > from && !send(chunkItem{part: part, recs: b.recs[from:i], bytes: b.size(from, i), prep: b.prep, ahead: true}) {
						break
					}
					from = i
					if !end() {
						break
					}
					open = true
				}
				postings += st.index(r, b.prep, pre)
				records++
			}
			if ctx.Err() != nil {
				continue
			}
			size += b.bytes
			if from < len(b.recs) && !send(chunkItem{part: part, recs: b.recs[from:], bytes: b.size(from, len(b.recs)), prep: b.prep, ahead: pre != nil}) {
				continue
			}
			if uint64(records) >= rebuildChunkRecords || size >= rebuildChunkBytes || postings >= rebuildChunkPostings {
				end()
			}
		}
		if ctx.Err() == nil {
			end()
		}
	}()
	return out
}

// ahead reports whether the stage can index record r ahead of the writer:
// a session record whose only index effects are new sessions and their
// messages' documents.
func (st *indexStage) ahead(r *Decoded, prep map[*memoryv1.Message]*preparedMessage) bool {
	kind, id, err := events.ParseSubject(r.Subject)
	if err != nil || kind != events.KindSession || r.Batch == nil {
		return false
	}
	_, known := st.users[id]
	for _, ev := range r.Events {
		switch ev := ev.(type) {
		case *memoryv1.SessionCreated:
			known = true
		case *memoryv1.MessagesAppended:
			for _, m := range ev.GetMessages() {
				if !known || prep[m] == nil {
					return false
				}
			}
		case *memoryv1.L2Archived:
			return false
		}
	}
	return true
}

// index follows record r: it assigns the doc ids of its documents and, if
// pre is not nil (st.ahead(r) holds then), buffers their postings in pre as
// writer.index does. It returns the number of postings of its message
// documents.
func (st *indexStage) index(r *Decoded, prep map[*memoryv1.Message]*preparedMessage, pre *preIndexed) (postings int) {
	kind, id, err := events.ParseSubject(r.Subject)
	if err != nil || kind != events.KindSession || r.Batch == nil {
		return 0
	}
	for _, ev := range r.Events {
		switch ev := ev.(type) {
		case *memoryv1.SessionCreated:
			st.users[id] = ev.GetUserId()
		case *memoryv1.MessagesAppended:
			user := st.users[id]
			for _, m := range ev.GetMessages() {
				p := prep[m]
				if p == nil || p.docLen == 0 {
					continue // (nil: the writer fails on it)
				}
				p.docID = st.nextDoc
				st.nextDoc++
				postings += len(p.tfs) + len(p.fields)
				if pre != nil {
					pre.add(user, id, p)
				}
			}
		case *memoryv1.L2Archived:
			for _, sum := range ev.GetSummaries() {
				if _, n := swap.TermFreqs(sum.GetText()); n > 0 {
					st.nextDoc++
				}
			}
		}
	}
	return postings
}

// add buffers the postings of message document p of session sessionID
// (user userKey), as writer.index does.
func (pre *preIndexed) add(userKey, sessionID string, p *preparedMessage) {
	terms := pre.pending.user(userKey)
	sess := pre.pending.session(sessionID)
	for _, t := range p.tfs {
		if strings.IndexByte(t.Term, sep) >= 0 || isFieldTerm(t.Term) {
			continue
		}
		pre.pending.add(terms, userKey, t.Term, posting{docID: p.docID, tf: t.TF, docLen: p.docLen, session: sess})
	}
	for _, t := range p.fields {
		pre.pending.add(terms, userKey, t, posting{docID: p.docID, tf: 1, docLen: p.docLen, session: sess})
	}
	st := pre.stats[userKey]
	pre.stats[userKey] = [2]uint64{st[0] + 1, st[1] + uint64(p.docLen)}
}
