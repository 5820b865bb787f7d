package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/internal/swap"
)

// SchemaVersion is the layout version of the bbolt file, stored in the meta
// bucket. Open refuses a file written with another version: the fix is a
// Rebuild from the log, never an in-place migration.
//
// 5: field terms (speaker, day) in bm25_postings/bm25_terms (fieldPrefix);
// bucket vectors and the meta keys vectors_model, vectors_cursor.
// 6: the analyzer splits words at '_' (connector punctuation): every BM25
// term of a text holding one changes (messages and scope entries).
// 7: the analyzer maps irregular verb forms to their base ("led" → "lead",
// "went" → "go"): the terms of texts holding one change.
// 8: a scope entry's value is indexed up to sharedmem.MaxIndexedValueBytes
// (entries.go): the entry documents of larger values change.
// 9: bucket data_bytes (each owner's bytes of large data held).
// 10: archived L2 summaries are bm25 documents (summary corpus,
// summaries.go): bm25_docs holds summary documents beside message ones.
// 11: a term whose postings are small keeps them in its bm25_terms value
// instead of bm25_postings keys (inlinePostingsMax).
const SchemaVersion = 11

// openTimeout bounds how long Open waits for the file lock (another process
// holding the file open).
const openTimeout = 5 * time.Second

// Bucket names. Every bucket of the file is listed here, and every key layout
// below is built and parsed only by the helpers of this file.
//
// Separators are a single 0x00 byte: session, user and agent ids follow the
// id rule [A-Za-z0-9_-]{1,128} and analyzed terms never contain 0x00, so a
// separator cannot occur inside a component. Numbers are fixed-width
// big-endian, so cursor order is numeric order.
var (
	// bucketMeta: "schema_version" → uint32 BE; "checkpoint" → uint64 BE, the
	// last stream sequence applied. Excluded from Digest.
	bucketMeta = []byte("meta")

	// bucketSessions: session_id → SessionIndexEntry (protobuf, deterministic).
	bucketSessions = []byte("sessions")
	// bucketByUser: user_id \x00 created_unix_nano(8B) \x00 session_id → empty.
	// Sessions without a user are not indexed here.
	bucketByUser = []byte("sessions_by_user")
	// bucketByAgent: agent_id \x00 created_unix_nano(8B) \x00 session_id → empty.
	bucketByAgent = []byte("sessions_by_agent")

	// bucketSwapMessages: session_id \x00 msg_seq(8B) → Message (protobuf), as
	// appended by MessagesAppended (token counts included).
	bucketSwapMessages = []byte("swap_messages")
	// bucketSwapIDs: session_id \x00 message_id → msg_seq(8B).
	bucketSwapIDs = []byte("swap_ids")
	// bucketSwapSummaries: session_id \x00 last_seq(8B) \x00 first_seq(8B)
	// \x00 summary_id → Summary (protobuf), every summary archived from L2.
	bucketSwapSummaries = []byte("swap_summaries")

	// bucketBM25Docs: doc_id(8B) → doc length(4B) msg_seq(8B) session_id,
	// or, for an archived summary (summaries.go), doc length(4B)
	// summaryDocMark(8B) then the summary's swap_summaries key.
	// doc ids come from the bucket's sequence, in application order, so a
	// replay of the same log assigns the same ids.
	bucketBM25Docs = []byte("bm25_docs")
	// bucketBM25Postings: user_key \x00 term \x00 block(8B) → the postings
	// of term in user_key's documents whose doc id is in block, packed in
	// ascending doc id order (postingBlockWriter below). block is
	// doc_id >> postingBlockShift: the block boundaries are a function of
	// the doc id only, so the same postings always give the same keys and
	// values whatever the transactions that wrote them (Digest: live ==
	// rebuild). Doc ids grow with the log, so the live path only ever
	// appends to the LAST block of a term (one read-modify-write per term
	// and transaction) and Rebuild writes each block once per chunk.
	//
	// Value: per posting, in ascending doc id order,
	//
	//	uvarint(doc_id − block<<postingBlockShift)  (< 2^postingBlockShift)
	//	uvarint(tf) uvarint(doc_len)
	//	uvarint(s): s even → the session is the (s/2)-th distinct session
	//	            already introduced in this block (0-based);
	//	            s odd  → a new session: (s−1)/2 bytes of session_id follow
	//	            and it takes the next index.
	//
	// The value carries what scoring and the session filter need, so a query
	// reads postings sequentially and never does a random read per posting
	// (the session filter compares each distinct session of a block once);
	// only the top hits are looked up (bm25_docs, then swap_messages).
	bucketBM25Postings = []byte("bm25_postings")
	//
	// Besides the terms of its content, a message document has field terms
	// (fieldPrefix below): the terms of the speaker's name and the day the
	// message was said. They share these buckets (their own postings and df)
	// but not the document length nor bm25_stats, which count content terms
	// only, so the BM25 statistics of content terms do not depend on them.
	// A field posting has tf 1 and the document's content length.
	// bucketBM25Terms: user_key \x00 term → df(8B), documents of user_key
	// holding term; then, when the term's postings are inline, its blocks
	// in ascending order, each uvarint(block) uvarint(length) and the
	// block's value (as in bm25_postings), and the term has no
	// bm25_postings key. Postings are inline exactly when their blocks
	// take at most inlinePostingsMax bytes so: a function of the postings
	// alone (like block boundaries), kept by every write and erasure, so
	// live and rebuilt files hold the same bytes. Most terms are rare (a
	// number, a name): inline, each costs one key instead of two or more,
	// in the value a search reads for df anyway.
	bucketBM25Terms = []byte("bm25_terms")
	// bucketBM25Stats: user_key \x00 → docs(8B) total length(8B), for N and
	// avgdl (the separator keeps the key of user_key "" non-empty: bbolt
	// refuses empty keys).
	bucketBM25Stats = []byte("bm25_stats")

	// Scope entries (entries.go). scope_key is aggregate_kind \x00 scope_id:
	// the log kind of the scope (agent, global, workflow, swarm, debate,
	// session_scope, user, app, project) and its id, both [A-Za-z0-9_-].
	// Entry keys follow sharedmem.ValidateKey ([A-Za-z0-9_.:/@-]), so they
	// never hold 0x00 either.

	// bucketEntries: scope_key \x00 key → Entry (protobuf, stored form: the
	// value as the event carries it, compressed or not), the key's current
	// version, tombstones included (deleted=true).
	bucketEntries = []byte("entries")
	// bucketEntryVersions: scope_key \x00 key \x00 version(8B) → Entry
	// (stored form), every version the log holds (the projection keeps them
	// all; the actor keeps the last sharedmem.MaxVersionsPerKey).
	bucketEntryVersions = []byte("entry_versions")
	// bucketScopeConfig: scope_key → ScopeConfig (protobuf), the last
	// ScopeConfigured of the scope.
	bucketScopeConfig = []byte("scope_config")
	// bucketEntryDocs: doc_id(8B) → doc_len(4B) version(8B) ref_len(2B) ref
	// then, per distinct term in term order, tf(4B) term_len(1B) term; ref is
	// scope_key \x00 key. The term list is what removing the document (a new
	// version or a tombstone of its key) needs. doc ids come from the
	// bucket's sequence, in application order (replay assigns the same ids).
	bucketEntryDocs = []byte("entry_docs")
	// bucketEntryDocIDs: scope_key \x00 key → doc_id(8B), the document of the
	// key's current version (absent for a tombstone or a version without
	// any term).
	bucketEntryDocIDs = []byte("entry_doc_ids")
	// bucketEntryPostings: scope_key \x00 term \x00 doc_id(8B) → tf(4B) doc_len(4B).
	bucketEntryPostings = []byte("entry_postings")
	// bucketEntryTerms: scope_key \x00 term → df(8B), documents of the scope
	// holding term (the key is deleted when df drops to 0).
	bucketEntryTerms = []byte("entry_terms")
	// bucketEntryStats: scope_key \x00 → docs(8B) total length(8B) (deleted
	// when the scope has no document left).
	bucketEntryStats = []byte("entry_stats")

	// bucketDataRefs: data_id → DataReference (protobuf), from DataStored on
	// mem.ev.data.<id>; the key is deleted by DataExpired (data.go).
	bucketDataRefs = []byte("data_refs")
	// bucketDataBytes: owner → bytes(8B), the sum of DataReference.size of
	// the owner's data in data_refs (the key is deleted at 0). Kept by
	// every DataStored and DataExpired (data.go); the node's max_data_bytes
	// quota reads it.
	bucketDataBytes = []byte("data_bytes")

	// bucketVectors: user_key \x00 session_id \x00 doc_id(8B) → the unit
	// vector of the message of bm25 document doc_id (its speaker's name,
	// ": ", its content; vectors.go), dims × float32 (IEEE 754 bits,
	// big-endian). Written by the VectorIndexer beside the projector, never
	// by ApplyBatch: vectors come from an external model, not from the log
	// alone, so Digest leaves this bucket out (like meta) and a Rebuild
	// starts it empty (the indexer embeds again from the first document).
	// Grouped like the postings: a USER search scans user_key's prefix, a
	// SESSION search user_key \x00 session_id's.
	bucketVectors = []byte("vectors")

	// bucketCommands: aggregate_kind \x00 aggregate_id \x00 command_key →
	// seq(8B) version(8B) [digest(16B)], every batch of the log that carries
	// a command id; the digest is the batch's command_digest, absent for
	// batches written without one (older logs: a 16-byte value)
	// (commands.go). command_key is events.CommandKey(actor_id, command_id):
	// the writer-scoped command id ([A-Za-z0-9_-] and '/', never 0x00). It
	// lets an actor answer a retried command as a duplicate at any age
	// (actors.CommandIndex). Size: ~40 bytes + the key per stored command;
	// nothing expires.
	bucketCommands = []byte("commands")
)

// Why entry postings are grouped by scope: a search always runs in exactly
// one scope, so with scope_key first a query is one prefix scan per term,
// idf/avgdl are that scope's own statistics, and no other scope's entries
// can be read, scored or returned (strict isolation by construction).

// Why postings are grouped by user: the two search scopes are "this session"
// and "every session of this session's user". With user_key first, a USER
// query is one prefix scan per term, a SESSION query is the same scan with a
// filter on the session id carried in the posting value, and idf/avgdl are
// the statistics of the user's own corpus (another user's messages neither
// appear in nor skew the ranking). Sessions without a user share user_key ""
// and are searched by SESSION scope only (USER scope on such a session falls
// back to SESSION scope: unrelated anonymous sessions are not one user).

// allBuckets lists every bucket in creation and Digest order.
var allBuckets = [][]byte{
	bucketMeta,
	bucketSessions, bucketByUser, bucketByAgent,
	bucketSwapMessages, bucketSwapIDs, bucketSwapSummaries,
	bucketBM25Docs, bucketBM25Postings, bucketBM25Terms, bucketBM25Stats,
	bucketEntries, bucketEntryVersions, bucketScopeConfig,
	bucketEntryDocs, bucketEntryDocIDs, bucketEntryPostings, bucketEntryTerms, bucketEntryStats,
	bucketDataRefs, bucketDataBytes,
	bucketCommands,
	bucketVectors,
}

// Keys of the meta bucket. vectors_model is the model of the vectors
// bucket (a string; vectors of another model are dropped), vectors_cursor
// the last bm25 doc id the VectorIndexer dealt with (u64).
var (
	metaSchemaVersion = []byte("schema_version")
	metaCheckpoint    = []byte("checkpoint")
	metaVectorsModel  = []byte("vectors_model")
	metaVectorsCursor = []byte("vectors_cursor")
)

// notDigested are the buckets Digest leaves out: not a function of the log.
var notDigested = [][]byte{bucketMeta, bucketVectors}

func vectorKey(userKey, sessionID string, docID uint64) []byte {
	return join([]byte(userKey), []byte(sessionID), u64(docID))
}

// vectorPrefix is the key prefix of a user's vectors (sessionID "") or of
// one session's.
func vectorPrefix(userKey, sessionID string) []byte {
	if sessionID == "" {
		return prefix(userKey)
	}
	return append(join([]byte(userKey), []byte(sessionID)), sep)
}

// vectorValue encodes a vector: float32 bits, big-endian.
func vectorValue(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.BigEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// dotVector is the dot product of q and an encoded vector of the same
// dimension (the caller checks len(v) == 4*len(q)).
func dotVector(q []float32, v []byte) float64 {
	var sum float32
	for i, x := range q {
		sum += x * math.Float32frombits(binary.BigEndian.Uint32(v[4*i:]))
	}
	return float64(sum)
}

const sep = 0x00

// Field terms. A field term is fieldPrefix, the field's name, ':' and a
// value; the analyzer never emits a term holding a control character
// (UAX #29 breaks words around them), so a field term cannot collide with a
// content term, and fieldPrefix sorts field terms before every content term
// of a user.
//
//	\x01speaker:<term>     a term of Message.name (swap.QueryTerms of it)
//	\x01day:<YYYY-MM-DD>   the UTC day of Message.said_unix_nano, or of
//	                       created_unix_nano when it is 0 (none if both are)
const fieldPrefix = "\x01"

func speakerTerm(term string) string { return fieldPrefix + "speaker:" + term }

func dayTerm(d swap.Day) string { return fieldPrefix + "day:" + d.String() }

// isFieldTerm reports whether term is a field term.
func isFieldTerm(term string) bool { return strings.HasPrefix(term, fieldPrefix) }

// mmapSize is the initial mmap size of a projection file (openStore).
const mmapSize = 1 << 30

func boltOptions() *bolt.Options {
	return &bolt.Options{
		Timeout: openTimeout,
		// The hashmap freelist: O(1) allocation on large files, and it is not
		// written to disk (NoFreelistSync), so commits stay small.
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
	}
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func u32(v uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return b[:]
}

// join concatenates parts with the 0x00 separator.
func join(parts ...[]byte) []byte {
	n := len(parts) - 1
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			out = append(out, sep)
		}
		out = append(out, p...)
	}
	return out
}

// commandKey is the bucketCommands key of key on aggregate kind/id.
func commandKey(kind, id, key string) []byte { return join([]byte(kind), []byte(id), []byte(key)) }

// commandValue is the bucketCommands value: seq, version, then the
// command digest when there is one.
func commandValue(seq, version uint64, digest []byte) []byte {
	return append(binary.BigEndian.AppendUint64(u64(seq), version), digest...)
}

// parseCommandValue reads a bucketCommands value (digest nil: none kept).
func parseCommandValue(v []byte) (seq, version uint64, digest []byte, err error) {
	if len(v) < 16 || len(v) > 16+sha256.Size {
		return 0, 0, nil, fmt.Errorf("%w: command value of %d bytes", ErrCorrupt, len(v))
	}
	if len(v) > 16 {
		digest = bytes.Clone(v[16:])
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), digest, nil
}

// prefix is the key prefix "a \x00" of the keys whose first component is a.
func prefix(a string) []byte { return append([]byte(a), sep) }

func sessionIndexKey(owner string, created int64, sessionID string) []byte {
	return join([]byte(owner), u64(uint64(created)), []byte(sessionID))
}

// parseSessionIndexKey returns the session id of a by_user/by_agent key.
func parseSessionIndexKey(k []byte) (string, error) {
	i := bytes.IndexByte(k, sep)
	if i < 0 || len(k) < i+1+8+1+1 || k[i+9] != sep {
		return "", fmt.Errorf("projections: malformed session index key %q", k)
	}
	return string(k[i+10:]), nil
}

func swapMessageKey(sessionID string, seq uint64) []byte {
	return join([]byte(sessionID), u64(seq))
}

func swapIDKey(sessionID, messageID string) []byte {
	return join([]byte(sessionID), []byte(messageID))
}

func swapSummaryKey(sessionID string, firstSeq, lastSeq uint64, summaryID string) []byte {
	return join([]byte(sessionID), u64(lastSeq), u64(firstSeq), []byte(summaryID))
}

func postingPrefix(userKey, term string) []byte {
	return append(join([]byte(userKey), []byte(term)), sep)
}

// postingBlockShift: a bm25_postings block holds the doc ids d with
// d >> postingBlockShift == block (128 doc ids: the offset in a block is a
// one-byte uvarint). Measured (2 CPUs, BenchmarkRebuild and BenchmarkSearch
// at 100k messages): shift 10 gave the same Rebuild rate (rare terms, one
// posting per key whatever the shift, dominate the key count) and USER
// search p99 within 10% of shift 7, but makes the live path rewrite up to 8×
// larger values per term and batch; 7 keeps that read-modify-write small.
// Doc ids are global, so a block of a user's term holds only that user's
// share of the 128 ids that contain the term.
const postingBlockShift = 7

// appendPostingKey appends user_key 0 term 0 block to dst, where group is
// termKey(userKey, term). Append-style so the writer can fill one arena.
func appendPostingKey[K string | []byte](dst []byte, group K, block uint64) []byte {
	dst = append(dst, group...)
	dst = append(dst, sep)
	return binary.BigEndian.AppendUint64(dst, block)
}

// postingBlockWriter encodes one bm25_postings value (layout at
// bucketBM25Postings).
type postingBlockWriter struct {
	buf      []byte
	block    uint64
	n        int    // postings encoded
	last     uint64 // doc id of the last posting (n > 0)
	sessions []string
}

// reset starts an empty value for block, reusing the buffer.
func (e *postingBlockWriter) reset(block uint64) {
	e.buf, e.block, e.n, e.last = e.buf[:0], block, 0, 0
	clear(e.sessions)
	e.sessions = e.sessions[:0]
}

// resume starts from the stored value old of block: the postings added next
// are appended to it.
func (e *postingBlockWriter) resume(block uint64, old []byte) error {
	e.reset(block)
	var r postingBlockReader
	r.reset(block, old, nil)
	for {
		p, ok, err := r.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		e.n++
		e.last = p.docID
	}
	for _, s := range r.sessions {
		e.sessions = append(e.sessions, string(s))
	}
	e.buf = append(e.buf, old...)
	return nil
}

// add appends a posting; doc ids must be in the block and ascending.
func (e *postingBlockWriter) add(docID uint64, tf, docLen uint32, sessionID string) error {
	if docID>>postingBlockShift != e.block || (e.n > 0 && docID <= e.last) {
		return fmt.Errorf("projections: posting of doc %d out of order in block %d (last doc %d)", docID, e.block, e.last)
	}
	e.buf = binary.AppendUvarint(e.buf, docID-e.block<<postingBlockShift)
	e.buf = binary.AppendUvarint(e.buf, uint64(tf))
	e.buf = binary.AppendUvarint(e.buf, uint64(docLen))
	idx := -1
	for i := len(e.sessions) - 1; i >= 0; i-- {
		if e.sessions[i] == sessionID {
			idx = i
			break
		}
	}
	if idx >= 0 {
		e.buf = binary.AppendUvarint(e.buf, uint64(idx)<<1)
	} else {
		e.buf = binary.AppendUvarint(e.buf, uint64(len(sessionID))<<1|1)
		e.buf = append(e.buf, sessionID...)
		e.sessions = append(e.sessions, sessionID)
	}
	e.n++
	e.last = docID
	return nil
}

// blockPosting is one decoded posting; session is its index in the block's
// session list, match whether that session is the reader's filter.
type blockPosting struct {
	docID      uint64
	tf, docLen uint32
	session    int
	match      bool
}

// postingBlockReader decodes one bm25_postings value sequentially. Session
// ids alias the value (valid only during the transaction).
type postingBlockReader struct {
	// v is the value, pos the offset of the next posting: an offset, not
	// a re-sliced value, so decoding writes no pointer (no write barrier
	// per posting while the garbage collector marks).
	v        []byte
	pos      int
	base     uint64
	n        int
	last     uint64
	sessions [][]byte
	filter   []byte // compared with each distinct session once
	match    int    // index of filter in sessions, -1 if not (yet) seen
}

// reset starts decoding v, the value of block; filter (nil: none) sets
// blockPosting.match.
func (r *postingBlockReader) reset(block uint64, v, filter []byte) {
	r.v, r.pos, r.base, r.n, r.last, r.filter, r.match = v, 0, block<<postingBlockShift, 0, 0, filter, -1
	clear(r.sessions)
	r.sessions = r.sessions[:0]
}

func (r *postingBlockReader) bad(what string) error {
	return fmt.Errorf("projections: malformed posting block %d (posting %d): %s", r.base>>postingBlockShift, r.n, what)
}

func (r *postingBlockReader) uvarint() (uint64, bool) {
	if r.pos < len(r.v) && r.v[r.pos] < 0x80 { // one byte: most of them
		r.pos++
		return uint64(r.v[r.pos-1]), true
	}
	v, n := binary.Uvarint(r.v[r.pos:])
	if n <= 0 {
		return 0, false
	}
	r.pos += n
	return v, true
}

// next returns the next posting; ok is false at the end of the value.
func (r *postingBlockReader) next() (p blockPosting, ok bool, err error) {
	if r.pos >= len(r.v) {
		return p, false, nil
	}
	off, ok1 := r.uvarint()
	tf, ok2 := r.uvarint()
	dl, ok3 := r.uvarint()
	s, ok4 := r.uvarint()
	switch {
	case !ok1 || !ok2 || !ok3 || !ok4:
		return p, false, r.bad("truncated")
	case off >= 1<<postingBlockShift || (r.n > 0 && r.base+off <= r.last):
		return p, false, r.bad("doc id out of order")
	case tf > 1<<32-1 || dl > 1<<32-1:
		return p, false, r.bad("tf or length overflow")
	}
	if s&1 == 1 {
		l := s >> 1
		if l > uint64(len(r.v)-r.pos) {
			return p, false, r.bad("truncated session id")
		}
		sid := r.v[r.pos : r.pos+int(l) : r.pos+int(l)]
		r.pos += int(l)
		if r.match < 0 && r.filter != nil && bytes.Equal(sid, r.filter) {
			r.match = len(r.sessions)
		}
		r.sessions = append(r.sessions, sid)
		p.session = len(r.sessions) - 1
	} else {
		if s>>1 >= uint64(len(r.sessions)) {
			return p, false, r.bad("unknown session index")
		}
		p.session = int(s >> 1)
	}
	p.docID, p.tf, p.docLen = r.base+off, uint32(tf), uint32(dl)
	p.match = p.session == r.match
	r.n++
	r.last = p.docID
	return p, true, nil
}

func termKey(userKey, term string) []byte { return join([]byte(userKey), []byte(term)) }

// inlinePostingsMax is the most bytes of inline blocks a bm25_terms value
// holds (a posting takes 4 bytes, and the session's id the first time a
// block names it; a block adds its number and length).
const inlinePostingsMax = 64

// postingBlock is one block of a term's postings: its number and its value
// (layout at bucketBM25Postings).
type postingBlock struct {
	block uint64
	v     []byte
}

// inlineSize is the size of blocks as inline blocks.
func inlineSize(blocks []postingBlock) int {
	n := 0
	for _, b := range blocks {
		n += inlineBlockSize(b.block, len(b.v))
	}
	return n
}

func inlineBlockSize(block uint64, n int) int {
	var tmp [binary.MaxVarintLen64]byte
	return binary.PutUvarint(tmp[:], block) + binary.PutUvarint(tmp[:], uint64(n)) + n
}

// appendTermValue appends a bm25_terms value to dst: df, then blocks
// inline (none: the postings are in bm25_postings).
func appendTermValue(dst []byte, df uint64, blocks []postingBlock) []byte {
	dst = binary.BigEndian.AppendUint64(dst, df)
	for _, b := range blocks {
		dst = binary.AppendUvarint(dst, b.block)
		dst = binary.AppendUvarint(dst, uint64(len(b.v)))
		dst = append(dst, b.v...)
	}
	return dst
}

// parseTermValue reads a bm25_terms value: inline is nil when the term's
// postings are in bm25_postings; otherwise its blocks (aliasing v) are
// appended to dst. A value of another shape reads as df 0.
func parseTermValue(v []byte, dst []postingBlock) (df uint64, inline []postingBlock, err error) {
	if len(v) < 8 {
		return 0, dst, fmt.Errorf("%w: bm25 term value of %d bytes", ErrCorrupt, len(v))
	}
	df, rest := binary.BigEndian.Uint64(v), v[8:]
	if len(rest) == 0 {
		return df, nil, nil
	}
	for len(rest) > 0 {
		block, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, dst, fmt.Errorf("%w: bm25 term value: bad block number", ErrCorrupt)
		}
		rest = rest[n:]
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return 0, dst, fmt.Errorf("%w: bm25 term value: bad block length", ErrCorrupt)
		}
		rest = rest[n:]
		dst = append(dst, postingBlock{block, rest[:l:l]})
		rest = rest[l:]
	}
	return df, dst, nil
}

// termDF is the df of the bm25_terms key k (0: absent).
func termDF(terms *bolt.Bucket, k []byte) uint64 {
	if v := terms.Get(k); len(v) >= 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func statsKey(userKey string) []byte { return prefix(userKey) }

// docValue layout: fixed-width numbers, then the session id.
func docValue(docLen uint32, msgSeq uint64, sessionID string) []byte {
	v := make([]byte, 0, 12+len(sessionID))
	v = append(v, u32(docLen)...)
	v = append(v, u64(msgSeq)...)
	return append(v, sessionID...)
}

// parseDocValue reads a bm25_docs value; msgSeq is summaryDocMark for a
// summary document (its key: summaryDocKey), whose session id is the first
// component of that key.
func parseDocValue(v []byte) (docLen uint32, msgSeq uint64, sessionID string, err error) {
	if len(v) < 12 {
		return 0, 0, "", fmt.Errorf("projections: malformed bm25 doc value (%d bytes)", len(v))
	}
	docLen, msgSeq, rest := binary.BigEndian.Uint32(v), binary.BigEndian.Uint64(v[4:]), v[12:]
	if msgSeq == summaryDocMark {
		i := bytes.IndexByte(rest, sep)
		if i < 0 {
			return 0, 0, "", fmt.Errorf("projections: malformed bm25 summary doc value %q", v)
		}
		rest = rest[:i]
	}
	return docLen, msgSeq, string(rest), nil
}

func statsValue(docs, totalLen uint64) []byte { return append(u64(docs), u64(totalLen)...) }

func parseStatsValue(v []byte) (docs, totalLen uint64) {
	if len(v) != 16 {
		return 0, 0
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
}

func getU64(b *bolt.Bucket, k []byte) uint64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// initSchema creates the buckets of a new file and checks the version of an
// existing one.
func initSchema(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	switch v := meta.Get(metaSchemaVersion); {
	case v == nil:
		if err := meta.Put(metaSchemaVersion, u32(SchemaVersion)); err != nil {
			return err
		}
	case len(v) != 4:
		return fmt.Errorf("%w: malformed schema_version %x", ErrSchemaVersion, v)
	default:
		if got := binary.BigEndian.Uint32(v); got != SchemaVersion {
			return fmt.Errorf("%w: file has schema version %d, this build reads version %d (rebuild the projection from the log)",
				ErrSchemaVersion, got, SchemaVersion)
		}
	}
	for _, name := range allBuckets[1:] {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// Scope entry keys. scopeKey is aggregate_kind \x00 scope_id.

func scopeKey(aggregateKind, scopeID string) []byte {
	return join([]byte(aggregateKind), []byte(scopeID))
}

// entryKey is scope_key \x00 key (bucketEntries, bucketEntryDocIDs, and the
// ref of an entry document).
func entryKey(aggregateKind, scopeID, key string) []byte {
	return join([]byte(aggregateKind), []byte(scopeID), []byte(key))
}

func entryVersionKey(aggregateKind, scopeID, key string, version uint64) []byte {
	return join([]byte(aggregateKind), []byte(scopeID), []byte(key), u64(version))
}

// entryVersionPrefix is the prefix of every version key of one entry key.
func entryVersionPrefix(aggregateKind, scopeID, key string) []byte {
	return append(entryKey(aggregateKind, scopeID, key), sep)
}

func entryPostingPrefix(scope []byte, term string) []byte {
	p := make([]byte, 0, len(scope)+len(term)+2)
	p = append(append(append(p, scope...), sep), term...)
	return append(p, sep)
}

func entryPostingKey(scope []byte, term string, docID uint64) []byte {
	return append(entryPostingPrefix(scope, term), u64(docID)...)
}

func entryTermKey(scope []byte, term string) []byte {
	return append(append(append([]byte(nil), scope...), sep), term...)
}

func entryStatsKey(scope []byte) []byte { return append(append([]byte(nil), scope...), sep) }

// entryPostingValue / parseEntryPostingValue: tf(4B) doc_len(4B).
func entryPostingValue(tf, docLen uint32) []byte { return append(u32(tf), u32(docLen)...) }

func parseEntryPostingValue(v []byte) (tf, docLen uint32, err error) {
	if len(v) != 8 {
		return 0, 0, fmt.Errorf("projections: malformed entry posting value (%d bytes)", len(v))
	}
	return binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:]), nil
}

// termTF is one distinct term of an entry document and its frequency.
type termTF struct {
	term string
	tf   uint32
}

// entryDocValue encodes doc_len(4B) version(8B) ref_len(2B) ref, then per
// term tf(4B) term_len(1B) term. Terms must be sorted, at most 255 bytes.
func entryDocValue(docLen uint32, version uint64, ref []byte, terms []termTF) []byte {
	n := 14 + len(ref)
	for _, t := range terms {
		n += 5 + len(t.term)
	}
	v := make([]byte, 0, n)
	v = append(v, u32(docLen)...)
	v = append(v, u64(version)...)
	v = binary.BigEndian.AppendUint16(v, uint16(len(ref)))
	v = append(v, ref...)
	for _, t := range terms {
		v = append(v, u32(t.tf)...)
		v = append(v, byte(len(t.term)))
		v = append(v, t.term...)
	}
	return v
}

// entryDoc is a decoded entry document (strings copied out of the value).
type entryDoc struct {
	docLen  uint32
	version uint64
	ref     []byte
	terms   []termTF
}

// parseEntryDocValue decodes an entryDocValue; withTerms=false stops after
// the ref.
func parseEntryDocValue(v []byte, withTerms bool) (entryDoc, error) {
	bad := func() (entryDoc, error) {
		return entryDoc{}, fmt.Errorf("projections: malformed entry doc value (%d bytes)", len(v))
	}
	if len(v) < 14 {
		return bad()
	}
	d := entryDoc{docLen: binary.BigEndian.Uint32(v), version: binary.BigEndian.Uint64(v[4:])}
	rl := int(binary.BigEndian.Uint16(v[12:]))
	rest := v[14:]
	if len(rest) < rl {
		return bad()
	}
	d.ref = append([]byte(nil), rest[:rl]...)
	if !withTerms {
		return d, nil
	}
	for rest = rest[rl:]; len(rest) > 0; {
		if len(rest) < 5 || len(rest) < 5+int(rest[4]) {
			return bad()
		}
		tl := int(rest[4])
		d.terms = append(d.terms, termTF{term: string(rest[5 : 5+tl]), tf: binary.BigEndian.Uint32(rest)})
		rest = rest[5+tl:]
	}
	return d, nil
}
