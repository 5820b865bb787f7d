// Package projections turns the event log into read models in one bbolt
// file: the sessions index, the swap (every message of every session, and
// the L2 summaries archived to swap) and a BM25 full-text index; the scope
// entries (current version, history, a BM25 index per scope: entries.go)
// and the large-data index (data.go).
//
// # Components
//
//   - Store: the bbolt file. ApplyBatch is the only writer of what the log
//     determines; Recall, MessagesByID, ArchivedSummaries, Session,
//     ListSessions and Search are read transactions, safe concurrently with
//     it.
//   - VectorIndexer (optional, vectors.go): embeds each new BM25 document
//     with an external endpoint beside the projector — the network call
//     with no transaction open — and writes the vectors (bucket vectors,
//     meta vectors_model/vectors_cursor, nothing else) in short write
//     transactions of its own; bbolt serializes them with ApplyBatch's.
//   - Projector: reads the JetStream stream with an ordered consumer from
//     the store's checkpoint and applies batches (BatchEvents records,
//     BatchBytes of log data or BatchWait after the first one, whichever
//     comes first; at once when it holds a sequence a WaitFor waits for:
//     hurry.go), each in transactions of at most BatchApply of applying;
//     when its context ends it stops between two records and the
//     transaction rolls back. WaitFor gives read-your-writes: a query
//     carrying min_seq waits until the projection applied it.
//   - Rebuild: replays the whole stream into path+".rebuild" and renames it
//     over path (atomic on POSIX). VerifyDigests compares a live file with a
//     rebuilt one bucket by bucket. It needs every sequence from 1 to the
//     last and never waits forever (logcheck.go): a missing stream, a gap
//     or a purged head is an error naming what is missing, and a read with
//     no message for the idle timeout ends with the reason.
//
// # Format
//
// schema.go holds every bucket name and key layout; the file records
// SchemaVersion in the meta bucket and Open refuses another version (the
// fix is a Rebuild, never an in-place migration). Numbers in keys are
// fixed-width big-endian so cursor order is numeric order; key components
// are separated by one 0x00 byte (ids are [A-Za-z0-9_-], terms never hold
// 0x00).
//
//	meta               schema_version → u32; checkpoint → u64 (last stream seq applied);
//	                   vectors_model → string; vectors_cursor → u64 (last bm25 doc id embedded)
//	sessions           session_id → SessionIndexEntry (protobuf)
//	sessions_by_user   user_id  0 created(u64) 0 session_id → ""
//	sessions_by_agent  agent_id 0 created(u64) 0 session_id → ""
//	swap_messages      session_id 0 msg_seq(u64) → Message (protobuf, as appended)
//	swap_ids           session_id 0 message_id → msg_seq(u64)
//	swap_summaries     session_id 0 last_seq(u64) 0 first_seq(u64) 0 summary_id → Summary (protobuf)
//	bm25_docs          doc_id(u64) → doc_len(u32) msg_seq(u64) session_id, or for an archived
//	                   summary doc_len(u32) 2^64−1 swap_summaries key (summaries.go)
//	bm25_postings      user_key 0 term 0 block(u64) → postings of doc_id>>7 == block, packed (schema.go)
//	bm25_terms         user_key 0 term → df(u64), then block(u64) and its packed postings when
//	                   they fit inline (one block of ≤ 64 bytes; no bm25_postings key then)
//	                   (terms include field terms: "\x01speaker:<name term>", "\x01day:YYYY-MM-DD")
//	bm25_stats         user_key 0 → docs(u64) total_len(u64)
//	                   (archived summaries: user_key "\x02"+user, a corpus of their own)
//	entries            kind 0 scope_id 0 key → Entry (protobuf, stored form: current version, tombstones too)
//	entry_versions     kind 0 scope_id 0 key 0 version(u64) → Entry (stored form)
//	scope_config       kind 0 scope_id → ScopeConfig (protobuf)
//	entry_docs         doc_id(u64) → doc_len(u32) version(u64) ref_len(u16) ref, (tf(u32) term_len(u8) term)*
//	entry_doc_ids      kind 0 scope_id 0 key → doc_id(u64) of the live current version
//	entry_postings     kind 0 scope_id 0 term 0 doc_id(u64) → tf(u32) doc_len(u32)
//	entry_terms        kind 0 scope_id 0 term → df(u64)
//	entry_stats        kind 0 scope_id 0 → docs(u64) total_len(u64)
//	data_refs          data_id → DataReference (protobuf), deleted on DataExpired
//	data_bytes         owner → bytes (u64) of its data in data_refs, deleted at 0
//	commands           kind 0 aggregate_id 0 command_key → seq(u64) version(u64)
//	vectors            user_key 0 session_id 0 doc_id(u64) → unit vector, float32 BE (not in Digest, not rebuilt)
//
// kind is the scope's log kind (agent, global, workflow, swarm, debate,
// session_scope, user, app, project); ref is kind 0 scope_id 0 key. Entry
// postings are grouped by scope: a search runs in exactly one scope.
//
// user_key is the session's user id ("" for sessions without a user):
// postings are grouped by user because the two search scopes are "this
// session" and "all sessions of this session's user" (see schema.go).
// Protobuf values are written with deterministic marshaling, so the same
// log always produces the same bytes (Digest relies on it).
//
// # Recovery rule
//
// Each batch of records is applied in ONE bbolt transaction together with
// the checkpoint (the last stream sequence of the batch). bbolt commits are
// atomic and durable (fsync) so after a crash the file holds every batch
// committed before it and nothing of the batch in flight. On restart the
// projector reads again from checkpoint+1: the lost batch is re-read and
// applied once. A record at or below the checkpoint is skipped. Effects are
// therefore exactly once, in stream order, without gaps.
//
// A record that cannot be decoded or applied (garbage bytes, an unknown
// event type, messages out of sequence) stops the projector with an error
// naming the stream sequence: it is never skipped. Records of subject kinds
// this projection does not know (neither session, scope nor data) only
// advance the checkpoint.
//
// Rebuild writes without per-commit fsync (the half-built file is discarded
// if the run does not finish), fsyncs once, renames, and fsyncs the
// directory. It reads, prepares (encoding, term frequencies) and applies in
// parallel, and applies in large transactions (up to 64k records); every
// transaction, live or rebuild, buffers its postings and swap messages and
// writes them in key order at the end (bbolt inserts in random order inside
// one transaction are slow), so the bytes stored are the same either way.
package projections
