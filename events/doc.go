// Package events is the event log of agentmem: subjects and ids, the
// envelope codec, the Log interface with its JetStream and in-memory
// implementations, and the snapshot store.
//
// # Layout
//
// One JetStream stream (StreamName, "MEM") holds subjects "mem.ev.>". One
// aggregate is one subject: mem.ev.session.<id>, mem.ev.agent.<id>,
// mem.ev.<scope-kind>.<scope-id>. Ids match [A-Za-z0-9_-]{1,128}
// (ValidateID), so no id can produce a wildcard or an extra token.
//
// A log in K > 1 partitions (PartitionedLog, docs/PARTITIONS.md) is the
// streams MEM_P0..MEM_P<K-1>: each aggregate in the stream of
// LogPartition(id, K) (placement's hash), stored as mem.ev.p<i>.<kind>.<id>
// and seen by every caller of the Log with its logical subject; sequences
// are per stream.
//
// # Format
//
// One message per accepted command. Its payload is a deterministic protobuf
// agentmem.memory.v1.EventBatch (EncodeBatch): command id, aggregate kind and
// id, the aggregate version after the batch, time, actor / causation /
// correlation ids, schema_version (SchemaVersion), the events, each a
// google.protobuf.Any named "type.googleapis.com/<protobuf full name>", and
// command_digest (16 bytes identifying the request, actors.CommandDigest;
// absent in batches written before it existed and in the node's own
// commands, which readers take as "unknown").
// Headers: Nats-Msg-Id = command id (deduplication within the stream's
// window, 2 minutes by default), Nats-Expected-Last-Subject-Sequence = the
// stream sequence of the aggregate's last message as the writer knows it
// (always sent, 0 for a new aggregate), Nats-Expected-Stream.
//
// Old event types are read through upcasters registered on the Codec; the
// log is never rewritten. An envelope with a newer schema version is refused
// (ErrUnsupportedSchema) rather than misread.
//
// # Recovery rule
//
// The message is the unit of atomicity: a crash leaves a command either
// wholly in the log or not at all, and only acknowledged appends may be
// applied to memory. An aggregate is rebuilt by loading its latest snapshot
// (SnapshotStore, which may be older than the log, never newer) and replaying,
// with Log.Load, every message after the snapshot's sequence up to the last
// sequence the stream leader reports. An Append that fails with
// ErrUnknownOutcome may or may not be stored: the writer retries with the
// same msgID and expected sequence, which either stores it or answers
// Duplicate with the original sequence; never assume it failed. ErrConflict
// means another writer appended first: reload, decide again.
//
// The JetStream server checks the expected sequence before the msgID, so a
// retried command whose first attempt was stored comes back as a conflict;
// JetStreamLog recognises it (the message right after the expected sequence
// carries the same msgID) and reports Duplicate, as MemLog does.
//
// # Stream settings
//
// NewJetStreamLog creates the stream, or updates an existing one to
// JetStreamConfig.StreamConfig: limits retention with no limits (nothing
// ages out), deny_delete (no single-message deletes: an aggregate with a
// hole cannot be replayed) and, by default, deny_purge (no purge of the
// stream or of one subject: a purged aggregate's snapshot and projection
// would still hold what the log no longer does). JetStream never lets
// either be turned off again on a stream that has it. A stream created by
// an earlier build without deny_purge is updated in place; if the server
// refuses (some versions do not allow changing the deny settings), the
// stream keeps its own value and a warning names the setting. Deleting the
// whole stream cannot be denied by its configuration, only by permissions:
// the embedded node's own user may neither delete nor purge it
// (natsembed.NodePermissions).
//
// A log that loses messages underneath a running node (stream deleted,
// or purged where deny_purge is off) is never papered over: appends and
// activations fail with ErrNoStream, the actors refuse an aggregate whose
// subject ends before the sequence its snapshot holds, and nothing but a
// node start creates the stream; a node refuses to start on a stream that
// ends before its projection's checkpoint (or is missing while the
// projection holds events).
//
// # Reading the whole stream
//
// Every reader of the whole stream (the projector, projections.Rebuild,
// replay export) goes through StreamReader, which both logs implement:
// Bounds (first and last sequence, message count) and Read (a Cursor from
// a sequence, optionally bounded by WithStop). A cursor skips the
// sequences the stream does not hold: a first sequence moved by a purge
// and gaps left by deleted messages are not errors at this level; whether
// they are allowed is the reader's decision, made with the removal ledger
// (ReadLedger: every sequence removed on purpose is listed there, by the
// removal that removed it). Any other missing sequence is data loss.
//
// The state at a removed head is held by the log itself: a scope whose
// older messages are compacted away (node --log-window) first gets a
// ScopeBaseline batch restating its state (the versions inside the
// time-travel window and each key's current one), so its kept messages
// are self-sufficient; the removal ledger (KindRemoval, ReadLedger) lists
// every removed sequence, and Rebuild accepts exactly those gaps. Sessions
// are not compacted: their events are their messages.
//
// # Physical compaction
//
// A removed message's bytes stay in the file store's blocks (a purge or a
// plain delete only marks them; SecureDeleteMsg overwrites at once), and
// so do a key-value bucket's replaced revisions and an object store's
// deleted chunks. CompactStream (`replay compact`, offline) rewrites a
// stream through a JetStream mirror into COMPACT_<stream> and back: the
// server copies the held messages only, at their sequences and with their
// times and headers, and deleting the old stream deletes its files. Its
// recovery rule: the state is the two streams (present, the copy's
// copying/verified mark and digest, the stream's agentmem.compacting
// mark); the stream is deleted only once the copy is verified message by
// message, the copy only once the refilled stream is; a verified copy
// beside an unmarked stream that differs from it is stale and is dropped.
// CheckNotMigrating and CheckNoCompaction refuse a half-compacted stream
// (ErrCompacting).
//
// # Erasure
//
// Messages leave the log online, only through the removal ledger
// (ledger.go, KindRemoval): a LogRemoval naming the exact sequences that go
// is recorded first, content-free, then a Remover purges them, then a
// LogRemovalCompleted follows. ReadLedger returns what was removed;
// projections' Rebuild accepts a missing sequence exactly when the ledger
// lists it. The erase requests themselves (who may erase what, plans, the
// actors' part) are api's and actors'; `replay compact` then removes the
// freed bytes from the files. A stream created with deny_purge cannot be
// erased from: move it first (below).
//
// # Moving to a stream that allows deletes
//
// MigrateAllowDelete (`replay migrate-log`, offline) moves a log that
// denies deletes to one that allows them with every sequence kept: a stream
// that never allowed deletes or purges holds exactly 1..N, so copying it in
// order (each publish expecting the sequence before it) into a temporary
// stream, deleting it and copying back into a stream of the same name and
// settings gives every message its old sequence. Its recovery rule: the
// state is the two streams (present, metadata marks, last sequences); a
// rerun continues; each copy is compared with its source in full before the
// source is deleted. NewJetStreamLog keeps a stream that allows deletes as
// it is and refuses a half-migrated one (CheckNotMigrating, ErrMigrating).
//
// # Durability
//
// An append is acknowledged after JetStream stored it. On the embedded
// single node that survives a process crash; surviving power loss needs
// SyncAlways (fsync per write) or a replicated stream (Replicas 3).
package events
