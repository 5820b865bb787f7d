// Package largedata keeps large data (tool results, files) for agents: bytes
// put once, named by a DataReference, read back by id until their lease ends.
//
// # Tiers
//
// Durable bytes live in a JetStream object store bucket (Config.Bucket,
// default MEM_DATA). Recently put or read bytes are also kept in an
// in-memory LRU bounded by the sum of their sizes (Config.MemoryBytes); an
// object bigger than the whole bound is never cached. The index of what
// exists is the event log: the bbolt projection indexes the events below
// and survives restarts.
//
// # Format
//
// One object per reference:
//
//	object name   the reference id: 128 random bits (crypto/rand), 32 lowercase hex digits
//	object bytes  the original bytes, or their zstd frame when compressed
//	metadata      "agentmem-ref": standard base64 of the deterministic protobuf
//	              encoding of the memoryv1.DataReference (at most 64 KiB encoded)
//
// The reference in the object's metadata makes every object self-describing:
// Ref and Get work from the object store alone, with a cold memory tier.
//
// # Uploads
//
// Data above one NATS message is sent in parts (PutPart) and stored by
// Commit. Parts live in a second bucket, Bucket + "_UPLOADS", whose TTL is
// Config.UploadTTL (the server removes them; no sweep is involved):
//
//	"<upload>.<offset, 16 hex digits>"  one part's bytes, metadata "agentmem-owner"
//	"<upload>.ref"                      written by a finished commit: the reference
//	                                    ("agentmem-ref") and its DataStored sequence
//	                                    ("agentmem-seq"), so a retried commit answers it
//
// Commit reads the parts from offset 0, each starting where the previous one
// ended, up to the announced size, then stores the whole exactly as Put does
// (one object, one DataStored), writes the marker and deletes the parts.
// Nothing of an upload is readable through Get before its commit; a crash at
// any point leaves either no object (the parts expire) or a committed one.
//
// Reference fields: size and sha256 (hex) are those of the ORIGINAL bytes;
// compressed says the object holds a zstd frame; stored_size is the length of
// the object bytes; stored_unix_nano is the put time and expires_unix_nano
// put time + lease (ttl, or Config.DefaultTTL when 0).
//
// Compression rule: data of at least Config.CompressThreshold bytes (default
// 4 KiB; negative disables) is compressed with zstd, and the compressed form
// is kept only if strictly smaller than the original.
//
// Checksum rule: every read from the object store is decompressed and its
// sha256 and size compared with the reference; a mismatch (or a stored size,
// frame or metadata that does not decode) is ErrCorrupt, naming the id and
// both hashes, and the bytes are never returned. Reads from the memory tier
// are not re-hashed: only verified or just-put bytes enter it.
//
// # Events
//
// Each reference is one aggregate of kind "data" on subject mem.ev.data.<id>,
// one EventBatch per message:
//
//	version 1  DataStored{ref}   command id <id>,     msg id data.<id>,        expected last seq 0
//	version 2  DataExpired{id}   command id "expire", msg id data.<id>.expire, expected last seq = the DataStored seq
//
// Data expires by its lease, never by reference counts: Sweep (run every
// Config.SweepEvery by Run) lists the bucket and expires every object whose
// expires_unix_nano <= now, unless Config.Holder holds it (something still
// refers to it: the node holds a session's offloaded tool results while the
// session is live). Get and Ref refuse a reference whose lease ended and
// that is not held (ErrExpired) before any sweep has run; after the sweep
// removed it, they find its DataExpired in the log and answer ErrExpired
// ("removed") too. Only an id never stored (or an orphan object, below) is
// ErrNotFound.
//
// # Recovery rule
//
// Put writes the object, then appends DataStored, then fills the memory
// tier. A crash or error between the first two leaves an object without an
// event whose id nobody was given: it is readable by id until its lease
// ends, and the sweep then deletes it without an event (nothing indexed it).
// An append whose outcome is unknown is retried with the same msg id and
// expectation, which stores it once.
//
// Sweep appends DataExpired, then deletes the object, then drops it from the
// memory tier. The event is the decision: a sweep interrupted after it finds
// the object again next time, sees the subject's last batch is version 2 and
// deletes the object without a second event. Two sweepers racing append
// with the same msg id and expectation: one event is stored.
//
// So after any crash: every DataStored without a DataExpired names an object
// that exists or whose lease has ended, and no object outlives its lease by
// more than one sweep period once a sweeper runs.
package largedata
