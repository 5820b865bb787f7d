package projections

import (
	"context"
	"strings"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/swap"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// rebuildChunk is the records of one Rebuild transaction, cut by Rebuild's
// index stage (indexChunks), with the BM25 postings of their messages
// grouped ahead when it could (pre).
type rebuildChunk struct {
	batches  []*readBatch
	records  uint64
	postings int         // postings of the chunk's message documents
	pre      *preIndexed // nil: the writer indexes the chunk's messages itself
}

// preIndexed is what the writer's index would buffer over a chunk
// (writer.pending, writer.statsDelta), built by the index stage in log
// order while the writer applies the previous chunk. Doc ids are assigned
// ahead (bm25_docs' sequence is advanced by nothing but message and summary
// documents, one per document with a term, in log order); the writer checks
// each against the id it gets (writer.index), so a disagreement fails the
// rebuild instead of writing wrong postings.
type preIndexed struct {
	pending bm25Pending // groups sorted by key
	stats   map[string][2]uint64
}

// indexStage is the state of Rebuild's index stage across chunks.
type indexStage struct {
	users   map[string]string // session id → user id, from the SessionCreated read so far
	nextDoc uint64            // the doc id of the next document
}

// indexChunks is Rebuild's third stage: it takes the prepared batches of
// in (log order), cuts them into transactions (the rebuildChunk* bounds) and
// groups the postings of each ahead of the writer. A chunk holding a record
// whose effect on the index the stage does not follow (removals, scope and
// data records, archived summaries, a session it did not see created) is
// sent with pre nil: the writer indexes it as ApplyBatch does; the stage
// still counts its documents so that later chunks get the right doc ids.
// The channel returned is closed once in is drained; on ctx's end the stage
// drains in and stops.
func indexChunks(ctx context.Context, in <-chan *readBatch) <-chan *rebuildChunk {
	out := make(chan *rebuildChunk, 1)
	go func() {
		defer close(out)
		st := indexStage{users: make(map[string]string), nextDoc: 1}
		var c *rebuildChunk
		var size int
		send := func() bool {
			if c == nil {
				return true
			}
			if c.pre != nil {
				c.pre.pending.group()
			}
			select {
			case out <- c:
				c, size = nil, 0
				return true
			case <-ctx.Done():
				return false
			}
		}
		for b := range in {
			if ctx.Err() != nil {
				continue // drain: the reader stops on ctx too
			}
			<-b.ready
			if c == nil {
				c = &rebuildChunk{pre: &preIndexed{stats: make(map[string][2]uint64)}}
			}
			c.batches = append(c.batches, b)
			c.records += uint64(len(b.recs))
			size += b.bytes
			for i := range b.recs {
				n, ok := st.index(&b.recs[i], b.prep, c.pre)
				c.postings += n
				if !ok {
					c.pre = nil
				}
			}
			if c.records >= rebuildChunkRecords || size >= rebuildChunkBytes || c.postings >= rebuildChunkPostings {
				if !send() {
					continue
				}
			}
		}
		if ctx.Err() == nil {
			send()
		}
	}()
	return out
}

// index follows record r: it assigns the doc ids of its documents and, if
// pre is not nil, buffers their postings in pre as writer.index does. It
// returns the number of postings of its message documents, and whether pre
// can still stand for the chunk's index.
func (st *indexStage) index(r *Decoded, prep map[*memoryv1.Message]*preparedMessage, pre *preIndexed) (postings int, ok bool) {
	kind, id, err := events.ParseSubject(r.Subject)
	if err != nil || kind != events.KindSession || r.Batch == nil {
		return 0, false
	}
	ok = true
	for _, ev := range r.Events {
		switch ev := ev.(type) {
		case *memoryv1.SessionCreated:
			st.users[id] = ev.GetUserId()
		case *memoryv1.MessagesAppended:
			user, known := st.users[id]
			for _, m := range ev.GetMessages() {
				p := prep[m]
				if p == nil || !known {
					ok = false
					continue
				}
				if p.docLen == 0 {
					continue
				}
				p.docID = st.nextDoc
				st.nextDoc++
				postings += len(p.tfs) + len(p.fields)
				if pre != nil && ok {
					pre.add(user, id, p)
				}
			}
		case *memoryv1.L2Archived:
			ok = false
			for _, sum := range ev.GetSummaries() {
				if _, n := swap.TermFreqs(sum.GetText()); n > 0 {
					st.nextDoc++
				}
			}
		}
	}
	return postings, ok
}

// add buffers the postings of message document p of session sessionID
// (user userKey), as writer.index does.
func (pre *preIndexed) add(userKey, sessionID string, p *preparedMessage) {
	terms := pre.pending.user(userKey)
	sess := pre.pending.session(sessionID)
	for t, tf := range p.tfs {
		if strings.IndexByte(t, sep) >= 0 || isFieldTerm(t) {
			continue
		}
		pre.pending.add(terms, userKey, t, posting{docID: p.docID, tf: tf, docLen: p.docLen, session: sess})
	}
	for _, t := range p.fields {
		pre.pending.add(terms, userKey, t, posting{docID: p.docID, tf: 1, docLen: p.docLen, session: sess})
	}
	st := pre.stats[userKey]
	pre.stats[userKey] = [2]uint64{st[0] + 1, st[1] + uint64(p.docLen)}
}
