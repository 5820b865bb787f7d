package projections

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/internal/swap"
	"github.com/agentmem/agentmem/largedata"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Scope entries read model.
//
// Every scope aggregate (internal/sharedmem) lives on mem.ev.<log kind>.<id>,
// the log kind being the scope kind except for session scopes, whose log
// kind is "session_scope" (mem.ev.session.<id> is the session aggregate;
// see actors.AggregateKind). Their batches hold EntryChanged and
// ScopeConfigured events; each EntryChanged carries the full Entry of the
// key's new version in its stored form (value zstd-compressed when
// compressed is set), and the projection stores it as it comes:
//
//   - entries holds the key's current version (a tombstone version, from a
//     delete, an expiry or an eviction, is current too: deleted=true);
//   - entry_versions holds every version;
//   - the scope's BM25 index holds one document per live current version.
//
// The projection checks what the scope actor checks (sharedmem.State.Apply):
// a valid key, each version the previous one plus one, a tombstone only over
// a live version, and a value that decodes to its size. Any other event type
// on a scope subject is an *ApplyError: nothing is skipped.
//
// # What an entry document holds
//
//   - the key's terms, each distinct term once: the key as written and the
//     key with its punctuation [_.:/@-] read as spaces ("customer_id" gives
//     "customer_id", "custom", "id"), so both the whole key and its parts
//     match;
//   - the tags, analyzed as text;
//   - the ORIGINAL value bytes (sharedmem.DecodeValue) analyzed as text,
//     only when the content type is textual (sharedmem.Textual: empty,
//     text/* or application/json), and only their first
//     sharedmem.MaxIndexedValueBytes (8 KiB, cut at a word boundary:
//     sharedmem.SearchableValue). The rest of a larger value is stored and
//     read back whole but not searchable; the put reply and each search hit
//     say how many bytes that is (unindexed_bytes). Other values (images,
//     binary protobuf, ...) contribute nothing: their document is the key
//     and the tags only.
//
// A document without any term is not indexed. A new version of a key removes
// the previous version's document (its postings, document frequencies and
// statistics, found through the term list kept in entry_docs) before the new
// version is indexed; a tombstone only removes.

// dataKind is the log kind of large-data references.
const dataKind = largedata.Kind

// sessionScopeKind is the log kind of the session:<id> scope
// (actors.SessionScopeKind).
const sessionScopeKind = "session_scope"

// scopeLogKinds is the set of log kinds holding scope aggregates.
var scopeLogKinds = func() map[string]bool {
	m := make(map[string]bool)
	for _, k := range sharedmem.Kinds() {
		m[ScopeLogKind(k)] = true
	}
	return m
}()

// ScopeLogKind is the log (aggregate) kind of scope kind k: k itself, except
// "session_scope" for sessions (as actors.AggregateKind).
func ScopeLogKind(k sharedmem.Kind) string {
	if k == sharedmem.KindSession {
		return sessionScopeKind
	}
	return string(k)
}

// projectedKind reports whether the records of log kind are decoded and
// applied. Records of other kinds only advance the checkpoint.
func projectedKind(kind string) bool {
	return kind == events.KindSession || kind == dataKind || kind == events.KindRemoval || scopeLogKinds[kind]
}

// applyOther applies a record of a subject that is not a session.
func (w *writer) applyOther(r *Decoded, kind, id string) error {
	switch {
	case scopeLogKinds[kind]:
		return w.applyScope(r, kind, id)
	case kind == dataKind:
		return w.applyData(r, id)
	case kind == events.KindRemoval:
		return w.applyRemoval(r)
	}
	return nil // a kind this projection does not know: the checkpoint still advances
}

// checkBatch verifies that r carries a decoded batch of aggregate kind/id.
func checkBatch(r *Decoded, kind, id string) error {
	if r.Batch == nil {
		return fmt.Errorf("%w: record without a decoded batch", events.ErrMalformed)
	}
	if a := r.Batch.GetAggregateId(); a != "" && a != id {
		return fmt.Errorf("%w: batch for aggregate %q on the subject of %s %q", events.ErrMalformed, a, kind, id)
	}
	if a := r.Batch.GetAggregateKind(); a != "" && a != kind {
		return fmt.Errorf("%w: batch of aggregate kind %q on a %s subject", events.ErrMalformed, a, kind)
	}
	return nil
}

// scopeWriter applies the events of one scope inside the write transaction.
type scopeWriter struct {
	kind, id string
	scope    []byte // scope_key

	bEntries, bVersions, bConfig *bolt.Bucket
	bDocs, bDocIDs               *bolt.Bucket
	// index: postings, document frequencies and statistics, written at
	// flush (entries_pending.go).
	pending *entryPending
	// keys: the keys added and the scopes rewritten (keysum.go).
	keys *keyChanges
}

func (w *writer) applyScope(r *Decoded, kind, id string) error {
	if err := checkBatch(r, kind, id); err != nil {
		return err
	}
	sw := w.scopeWriter(kind, id)
	for i, ev := range r.Events {
		var err error
		switch ev := ev.(type) {
		case *memoryv1.EntryChanged:
			err = sw.putEntry(ev.GetEntry())
		case *memoryv1.ScopeConfigured:
			err = sw.configure(ev)
		case *memoryv1.ScopeBaseline:
			err = sw.applyBaseline(w, ev)
		default:
			err = fmt.Errorf("%w: %T is not a scope event this projection knows", events.ErrUnknownEventType, ev)
		}
		if err != nil {
			return fmt.Errorf("event %d (%T): %w", i, ev, err)
		}
	}
	return nil
}

// scopeWriter returns the writer of scope kind/id in w's transaction.
func (w *writer) scopeWriter(kind, id string) *scopeWriter {
	tx := w.tx
	return &scopeWriter{
		kind: kind, id: id, scope: scopeKey(kind, id),
		bEntries:  tx.Bucket(bucketEntries),
		bVersions: tx.Bucket(bucketEntryVersions),
		bConfig:   tx.Bucket(bucketScopeConfig),
		bDocs:     tx.Bucket(bucketEntryDocs),
		bDocIDs:   tx.Bucket(bucketEntryDocIDs),
		pending:   &w.entries,
		keys:      &w.keys,
	}
}

func (sw *scopeWriter) configure(ev *memoryv1.ScopeConfigured) error {
	if ev.GetEpisodicTtlSeconds() < sharedmem.NeverExpires {
		return errors.New("episodic TTL below -1 (never)")
	}
	v, err := marshalOpts.Marshal(&memoryv1.ScopeConfig{MaxEntries: ev.GetMaxEntries(), EpisodicTtlSeconds: ev.GetEpisodicTtlSeconds()})
	if err != nil {
		return err
	}
	return sw.bConfig.Put(sw.scope, v)
}

// putEntry records e as the new current version of its key and reindexes it.
func (sw *scopeWriter) putEntry(e *memoryv1.Entry) error {
	if e == nil {
		return errors.New("no entry")
	}
	if err := sharedmem.ValidateKey(e.GetKey()); err != nil {
		return err
	}
	ek := entryKey(sw.kind, sw.id, e.GetKey())
	var curVersion uint64
	live := false
	if v := sw.bEntries.Get(ek); v == nil {
		sw.keys.added = append(sw.keys.added, scopedKey{string(sw.scope), e.GetKey()})
	} else {
		cur := new(memoryv1.Entry)
		if err := proto.Unmarshal(v, cur); err != nil {
			return fmt.Errorf("stored entry %q: %w", ek, err)
		}
		curVersion, live = cur.GetVersion(), !cur.GetDeleted()
	}
	if e.GetVersion() != curVersion+1 {
		return fmt.Errorf("key %q version %d after version %d", e.GetKey(), e.GetVersion(), curVersion)
	}
	if e.GetDeleted() && !live {
		return fmt.Errorf("tombstone for key %q, which is not live", e.GetKey())
	}
	value, err := sharedmem.DecodeValue(e)
	if err != nil {
		return fmt.Errorf("key %q version %d: %w", e.GetKey(), e.GetVersion(), err)
	}
	v, err := marshalOpts.Marshal(e)
	if err != nil {
		return err
	}
	if err := sw.bEntries.Put(ek, v); err != nil {
		return err
	}
	if err := sw.bVersions.Put(entryVersionKey(sw.kind, sw.id, e.GetKey(), e.GetVersion()), v); err != nil {
		return err
	}
	if err := sw.unindex(ek); err != nil {
		return err
	}
	if e.GetDeleted() {
		return nil
	}
	return sw.index(ek, e, value)
}

// keyPunct is the punctuation allowed in entry keys (sharedmem.ValidateKey).
const keyPunct = "_.:/@-"

// entryTermFreqs returns the terms of e's document (see the package comment
// above) and its length. value is the original value bytes.
func entryTermFreqs(e *memoryv1.Entry, value []byte) (map[string]uint32, uint32) {
	var text strings.Builder
	for _, t := range e.GetTags() {
		text.WriteString(t)
		text.WriteByte('\n')
	}
	indexed, _ := sharedmem.SearchableValue(e.GetContentType(), value)
	text.Write(indexed)
	tfs, n := swap.TermFreqs(text.String())
	key := e.GetKey()
	keyTerms := swap.QueryTerms(key) // distinct, in order
	if strings.ContainsAny(key, keyPunct) {
		split := strings.Map(func(r rune) rune {
			if strings.ContainsRune(keyPunct, r) {
				return ' '
			}
			return r
		}, key)
		for _, t := range swap.QueryTerms(split) {
			if !slices.Contains(keyTerms, t) {
				keyTerms = append(keyTerms, t)
			}
		}
	}
	for _, t := range keyTerms {
		if tfs[t] < ^uint32(0) {
			tfs[t]++
		}
		if n < ^uint32(0) {
			n++
		}
	}
	return tfs, n
}

// index adds the document of e (current version of entry key ek).
func (sw *scopeWriter) index(ek []byte, e *memoryv1.Entry, value []byte) error {
	tfs, docLen := entryTermFreqs(e, value)
	terms := make([]termTF, 0, len(tfs))
	for t, tf := range tfs {
		if t == "" || len(t) > 255 || strings.IndexByte(t, sep) >= 0 {
			continue // cannot be a key component; the analyzer never emits it
		}
		terms = append(terms, termTF{term: t, tf: tf})
	}
	if len(terms) == 0 {
		return nil
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].term < terms[j].term })
	docID, err := sw.bDocs.NextSequence()
	if err != nil {
		return err
	}
	if err := sw.bDocs.Put(u64(docID), entryDocValue(docLen, e.GetVersion(), ek, terms)); err != nil {
		return err
	}
	if err := sw.bDocIDs.Put(ek, u64(docID)); err != nil {
		return err
	}
	for _, t := range terms {
		sw.pending.addPosting(entryPostingKey(sw.scope, t.term, docID), entryPostingValue(t.tf, docLen), entryTermKey(sw.scope, t.term))
	}
	sw.pending.addDoc(entryStatsKey(sw.scope), 1, int64(docLen))
	return nil
}

// unindex removes the document of entry key ek's current version, if any.
func (sw *scopeWriter) unindex(ek []byte) error {
	v := sw.bDocIDs.Get(ek)
	if v == nil {
		return nil
	}
	if len(v) != 8 {
		return fmt.Errorf("malformed entry doc id of %q", ek)
	}
	docID := beU64(v)
	dv := sw.bDocs.Get(u64(docID))
	if dv == nil {
		return fmt.Errorf("entry %q names missing document %d", ek, docID)
	}
	doc, err := parseEntryDocValue(dv, true)
	if err != nil {
		return err
	}
	if !bytes.Equal(doc.ref, ek) {
		return fmt.Errorf("document %d belongs to %q, not %q", docID, doc.ref, ek)
	}
	for _, t := range doc.terms {
		sw.pending.deletePosting(entryPostingKey(sw.scope, t.term, docID), entryTermKey(sw.scope, t.term))
	}
	sw.pending.addDoc(entryStatsKey(sw.scope), -1, -int64(doc.docLen))
	if err := sw.bDocs.Delete(u64(docID)); err != nil {
		return err
	}
	return sw.bDocIDs.Delete(ek)
}

// validateScopeArgs checks the scope and key of a query: a scope log kind,
// a valid id, and (when key is not nil) a valid entry key.
func validateScopeArgs(aggregateKind, scopeID string, key *string) error {
	if !scopeLogKinds[aggregateKind] {
		return &ArgumentError{Field: "kind", Reason: fmt.Sprintf("%q is not a scope log kind", aggregateKind)}
	}
	if err := events.ValidateID("scope_id", scopeID); err != nil {
		return &ArgumentError{Field: "scope_id", Reason: err.Error()}
	}
	if key != nil {
		if err := sharedmem.ValidateKey(*key); err != nil {
			return &ArgumentError{Field: "key", Reason: err.Error()}
		}
	}
	return nil
}

func unmarshalPlain(v []byte, what []byte) (*memoryv1.Entry, error) {
	e := new(memoryv1.Entry)
	if err := proto.Unmarshal(v, e); err != nil {
		return nil, fmt.Errorf("projections: stored entry %q: %w", what, err)
	}
	p, err := sharedmem.Plain(e)
	if err != nil {
		return nil, fmt.Errorf("projections: stored entry %q: %w", what, err)
	}
	return p, nil
}

// Entry returns the current version of key in the scope aggregateKind/scopeID
// (a log kind: "session_scope" for session scopes, see ScopeLogKind) with its
// original value (compressed=false), tombstones included (deleted=true);
// false if the projection does not know the key (yet). Expiry is not
// checked: an entry past its expiry is returned until its tombstone is
// projected. An invalid kind, id or key is an *ArgumentError.
func (s *Store) Entry(aggregateKind, scopeID, key string) (*memoryv1.Entry, bool, error) {
	if err := validateScopeArgs(aggregateKind, scopeID, &key); err != nil {
		return nil, false, err
	}
	var e *memoryv1.Entry
	err := s.view(func(tx *bolt.Tx) error {
		ek := entryKey(aggregateKind, scopeID, key)
		v := tx.Bucket(bucketEntries).Get(ek)
		if v == nil {
			return nil
		}
		var err error
		e, err = unmarshalPlain(v, ek)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return e, e != nil, nil
}

// EntryHistory returns every version of key in the scope, oldest first, with
// original values (tombstones included); an empty slice for an unknown key.
func (s *Store) EntryHistory(aggregateKind, scopeID, key string) ([]*memoryv1.Entry, error) {
	if err := validateScopeArgs(aggregateKind, scopeID, &key); err != nil {
		return nil, err
	}
	out := []*memoryv1.Entry{}
	err := s.view(func(tx *bolt.Tx) error {
		p := entryVersionPrefix(aggregateKind, scopeID, key)
		c := tx.Bucket(bucketEntryVersions).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if len(k) != len(p)+8 {
				return fmt.Errorf("projections: malformed entry version key %q", k)
			}
			e, err := unmarshalPlain(v, k)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScopeConfig returns the last ScopeConfigured of the scope, false if it was
// never configured.
func (s *Store) ScopeConfig(aggregateKind, scopeID string) (*memoryv1.ScopeConfig, bool, error) {
	if err := validateScopeArgs(aggregateKind, scopeID, nil); err != nil {
		return nil, false, err
	}
	var cfg *memoryv1.ScopeConfig
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketScopeConfig).Get(scopeKey(aggregateKind, scopeID))
		if v == nil {
			return nil
		}
		cfg = new(memoryv1.ScopeConfig)
		if err := proto.Unmarshal(v, cfg); err != nil {
			return fmt.Errorf("projections: stored scope config %s/%s: %w", aggregateKind, scopeID, err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return cfg, cfg != nil, nil
}

// dumpEntryDoc renders an entry_docs value for Dump.
func dumpEntryDoc(d entryDoc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "len=%d version=%d ref=%q terms=[", d.docLen, d.version, bytes.ReplaceAll(d.ref, []byte{sep}, []byte(" | ")))
	for i, t := range d.terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%q:%d", t.term, t.tf)
	}
	b.WriteByte(']')
	return b.String()
}
