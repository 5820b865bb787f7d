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
// # Format
//
// One message per accepted command. Its payload is a deterministic protobuf
// agentmem.memory.v1.EventBatch (EncodeBatch): command id, aggregate kind and
// id, the aggregate version after the batch, time, actor / causation /
// correlation ids, schema_version (SchemaVersion) and the events, each a
// google.protobuf.Any named "type.googleapis.com/<protobuf full name>".
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
// # Durability
//
// An append is acknowledged after JetStream stored it. On the embedded
// single node that survives a process crash; surviving power loss needs
// SyncAlways (fsync per write) or a replicated stream (Replicas 3).
package events
