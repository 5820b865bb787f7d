package projections

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
)

// Erasure. A LogRemoval on mem.ev.removal.<id> names the
// aggregates whose read models go ("erased"); applying it deletes every row
// they hold here: a session's index entry, swap, BM25 documents and
// postings (with their df and statistics), vectors and commands; a scope's
// entries, versions, configuration, index and commands. A ScopeBaseline on
// a scope's own subject replaces what the scope held by the state it
// carries (an entry erase or a compaction rewrote the scope).
//
// Erasing is deterministic: a Rebuild of the log after the erasure (which
// no longer holds the erased messages) gives the same rows, except the
// document ids, which come from the buckets' sequences and so keep the
// holes the erased documents leave (Digest compares documents by rank).

// applyRemoval applies a record of the removal ledger.
func (w *writer) applyRemoval(r *Decoded) error {
	for i, ev := range r.Events {
		switch ev := ev.(type) {
		case *memoryv1.LogRemoval:
			if err := w.flush(); err != nil { // the transaction's buffered rows first
				return err
			}
			for _, agg := range ev.GetErased() {
				if err := w.eraseAggregate(agg); err != nil {
					return fmt.Errorf("removal %s: erase %s: %w", ev.GetId(), agg, err)
				}
			}
		case *memoryv1.LogRemovalCompleted:
		default:
			return fmt.Errorf("event %d: %w: %T in the removal ledger", i, events.ErrUnknownEventType, ev)
		}
	}
	return nil
}

// eraseAggregate deletes the rows of "<log kind>.<id>".
func (w *writer) eraseAggregate(agg string) error {
	kind, id, ok := strings.Cut(agg, ".")
	if !ok {
		return fmt.Errorf("%w: erased aggregate %q is not <kind>.<id>", events.ErrMalformed, agg)
	}
	if err := events.ValidateID("erased kind", kind); err != nil {
		return err
	}
	if err := events.ValidateID("erased id", id); err != nil {
		return err
	}
	switch {
	case kind == events.KindSession:
		err := w.eraseSession(id)
		if err != nil {
			return err
		}
	case scopeLogKinds[kind]:
		if err := w.eraseScope(kind, id); err != nil {
			return err
		}
		if err := w.entries.flush(w.tx.Bucket(bucketEntryPostings), w.tx.Bucket(bucketEntryTerms), w.tx.Bucket(bucketEntryStats)); err != nil {
			return err
		}
	case kind == dataKind:
		if err := w.eraseData(id); err != nil {
			return err
		}
	}
	return deletePrefix(w.bCommands, join([]byte(kind), []byte(id), nil))
}

// eraseSession deletes every row of session id.
func (w *writer) eraseSession(id string) error {
	e, err := w.session(id)
	if err != nil {
		return err
	}
	delete(w.sessions, id)
	if e == nil {
		return nil // never projected (or already erased)
	}
	userKey := e.GetUserId()
	if userKey != "" {
		if err := w.bByUser.Delete(sessionIndexKey(userKey, e.GetCreatedUnixNano(), id)); err != nil {
			return err
		}
	}
	if e.GetAgentId() != "" {
		if err := w.bByAgent.Delete(sessionIndexKey(e.GetAgentId(), e.GetCreatedUnixNano(), id)); err != nil {
			return err
		}
	}
	if err := w.bSessions.Delete([]byte(id)); err != nil {
		return err
	}
	// The terms of the session's documents, from its messages.
	terms := make(map[string]bool)
	p := prefix(id)
	c := w.bMessages.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		m := new(memoryv1.Message)
		if err := proto.Unmarshal(v, m); err != nil {
			return fmt.Errorf("stored message %q: %w", k, err)
		}
		tfs, _ := w.termFreqs(m)
		for _, t := range tfs {
			terms[t.Term] = true
		}
		for _, t := range w.fieldTerms(m) {
			terms[t] = true
		}
	}
	if err := w.unpost(userKey, id, terms); err != nil {
		return err
	}
	if err := w.unpostSummaries(userKey, id); err != nil {
		return err
	}
	for _, b := range []*bolt.Bucket{w.bMessages, w.bIDs, w.bSummaries} {
		if err := deletePrefix(b, p); err != nil {
			return err
		}
	}
	return deletePrefix(w.tx.Bucket(bucketVectors), vectorPrefix(userKey, id))
}

// unpost removes session id's postings of terms from userKey's index, their
// documents, and their share of df and the statistics.
func (w *writer) unpost(userKey, id string, terms map[string]bool) error {
	docs := make(map[uint64]uint32) // doc id → length, of the session's documents
	var enc postingBlockWriter
	var dec postingBlockReader
	// filter drops the session's postings from block value v and returns
	// the rest (nil if none) and how many it dropped.
	filter := func(t string, block uint64, v []byte) ([]byte, uint64, error) {
		dec.reset(block, v, []byte(id))
		enc.reset(block)
		var removed uint64
		for {
			p, ok, err := dec.next()
			if err != nil {
				return nil, 0, err
			}
			if !ok {
				break
			}
			if p.match {
				removed++
				if !isFieldTerm(t) {
					docs[p.docID] = p.docLen
				}
				continue
			}
			if err := enc.add(p.docID, p.tf, p.docLen, string(dec.sessions[p.session])); err != nil {
				return nil, 0, err
			}
		}
		if enc.n == 0 {
			return nil, removed, nil
		}
		return bytes.Clone(enc.buf), removed, nil
	}
	for t := range terms {
		tk := termKey(userKey, t)
		tv := w.bTerms.Get(tk)
		if tv == nil {
			continue
		}
		df, inline, err := parseTermValue(tv, nil)
		if err != nil {
			return fmt.Errorf("term %q: %w", tk, err)
		}
		if df == 0 {
			continue
		}
		if inline != nil {
			var kept []postingBlock
			var dropped uint64
			for _, ib := range inline {
				nv, removed, err := filter(t, ib.block, ib.v)
				if err != nil {
					return err
				}
				dropped += removed
				if nv != nil {
					kept = append(kept, postingBlock{ib.block, nv})
				}
			}
			switch {
			case dropped == 0:
			case dropped >= df || len(kept) == 0:
				err = w.bTerms.Delete(tk)
			default: // fewer bytes than before: still inline
				err = w.bTerms.Put(tk, appendTermValue(nil, df-dropped, kept))
			}
			if err != nil {
				return err
			}
			continue
		}
		pp := postingPrefix(userKey, t)
		var rewrites []keyValue
		var dropped uint64
		c := w.bPostings.Cursor()
		for k, v := c.Seek(pp); k != nil && bytes.HasPrefix(k, pp); k, v = c.Next() {
			nv, removed, err := filter(t, beU64(k[len(k)-8:]), v)
			if err != nil {
				return err
			}
			if removed == 0 {
				continue
			}
			dropped += removed
			rewrites = append(rewrites, keyValue{k: bytes.Clone(k), v: nv})
		}
		if dropped == 0 {
			continue
		}
		df -= min(df, dropped)
		for _, kv := range rewrites { // after the walk: a Put invalidates the cursor
			var err error
			if kv.v == nil {
				err = w.bPostings.Delete(kv.k)
			} else {
				err = w.bPostings.Put(kv.k, kv.v)
			}
			if err != nil {
				return err
			}
		}
		if df == 0 {
			if err := w.bTerms.Delete(tk); err != nil {
				return err
			}
			continue
		}
		// What is left may be small enough to be inline, as a write of
		// these postings alone would have it (bucketBM25Terms).
		var left []postingBlock
		var keys [][]byte
		size := 0
		c = w.bPostings.Cursor()
		for k, v := c.Seek(pp); k != nil && bytes.HasPrefix(k, pp) && size <= inlinePostingsMax; k, v = c.Next() {
			b := postingBlock{beU64(k[len(k)-8:]), bytes.Clone(v)}
			size += inlineBlockSize(b.block, len(b.v))
			left = append(left, b)
			keys = append(keys, bytes.Clone(k))
		}
		tv = u64(df)
		if size <= inlinePostingsMax {
			for _, k := range keys { // after the walk
				if err := w.bPostings.Delete(k); err != nil {
					return err
				}
			}
			tv = appendTermValue(nil, df, left)
		}
		if err := w.bTerms.Put(tk, tv); err != nil {
			return err
		}
	}
	var total uint64
	for doc, l := range docs {
		total += uint64(l)
		if err := w.bDocs.Delete(u64(doc)); err != nil {
			return err
		}
	}
	if len(docs) == 0 {
		return nil
	}
	n, sum := parseStatsValue(w.bStats.Get(statsKey(userKey)))
	if n < uint64(len(docs)) || sum < total {
		return fmt.Errorf("bm25 statistics of user %q (%d docs, length %d) below the erased session's (%d, %d)", userKey, n, sum, len(docs), total)
	}
	if n == uint64(len(docs)) {
		return w.bStats.Delete(statsKey(userKey))
	}
	return w.bStats.Put(statsKey(userKey), statsValue(n-uint64(len(docs)), sum-total))
}

// eraseScope deletes every row of scope kind/id.
func (w *writer) eraseScope(kind, id string) error {
	sw := w.scopeWriter(kind, id)
	sw.keys.dropped = append(sw.keys.dropped, string(sw.scope))
	p := append(bytes.Clone(sw.scope), sep)
	var keys [][]byte
	c := sw.bDocIDs.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, ek := range keys {
		if err := sw.unindex(ek); err != nil {
			return err
		}
	}
	for _, b := range []*bolt.Bucket{sw.bEntries, sw.bVersions} {
		if err := deletePrefix(b, p); err != nil {
			return err
		}
	}
	return sw.bConfig.Delete(sw.scope)
}

// applyBaseline replaces what scope sw holds by the state b carries.
func (sw *scopeWriter) applyBaseline(w *writer, b *memoryv1.ScopeBaseline) error {
	st := b.GetState()
	if st == nil {
		return errors.New("baseline without a state")
	}
	// What the scope held goes, the index of its commands with it (a
	// Rebuild no longer reads them); buffered rows first.
	if err := w.flush(); err != nil {
		return err
	}
	if err := deletePrefix(w.bCommands, join([]byte(sw.kind), []byte(sw.id), nil)); err != nil {
		return err
	}
	if err := w.eraseScope(sw.kind, sw.id); err != nil {
		return err
	}
	if cfg := st.GetConfig(); cfg != nil {
		if err := sw.configure(&memoryv1.ScopeConfigured{MaxEntries: cfg.GetMaxEntries(), EpisodicTtlSeconds: cfg.GetEpisodicTtlSeconds()}); err != nil {
			return err
		}
	}
	for _, kh := range st.GetKeys() {
		vs := kh.GetVersions()
		for i, e := range vs {
			if err := sw.restate(e, i == len(vs)-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// restate writes version e of its key as a baseline restates it (the key's
// versions need not start at 1); last: e is the key's current version.
func (sw *scopeWriter) restate(e *memoryv1.Entry, last bool) error {
	v, err := marshalOpts.Marshal(e)
	if err != nil {
		return err
	}
	if err := sw.bVersions.Put(entryVersionKey(sw.kind, sw.id, e.GetKey(), e.GetVersion()), v); err != nil {
		return err
	}
	if !last {
		return nil
	}
	ek := entryKey(sw.kind, sw.id, e.GetKey())
	if err := sw.bEntries.Put(ek, v); err != nil {
		return err
	}
	if e.GetDeleted() {
		return nil
	}
	value, err := sharedmem.DecodeValue(e)
	if err != nil {
		return err
	}
	return sw.index(ek, e, value)
}

// deletePrefix deletes every key of b starting with p.
func deletePrefix(b *bolt.Bucket, p []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// eraseData deletes the reference of large data id and its bytes from its
// owner's sum.
func (w *writer) eraseData(id string) error {
	b, owners := w.tx.Bucket(bucketDataRefs), w.tx.Bucket(bucketDataBytes)
	v := b.Get([]byte(id))
	if v == nil {
		return nil
	}
	ref := new(memoryv1.DataReference)
	if err := proto.Unmarshal(v, ref); err != nil {
		return err
	}
	if err := addDataBytes(owners, ref.GetOwner(), -int64(ref.GetSize())); err != nil {
		return err
	}
	return b.Delete([]byte(id))
}
