// Package sharedmem is the model of one agentmem memory scope: pure,
// deterministic Go with no I/O, no goroutines and no clock.
//
// # Scopes
//
// Each scope — agent:<id>, global, workflow:<id>, swarm:<id>, debate:<id>,
// session:<id>, user:<id>, app:<name>, project:<id>, agent_type:<type> —
// is one aggregate on subject mem.ev.<kind>.<id> (the global scope has id
// "global"). Ids are
// 1..128 bytes of [A-Za-z0-9_-]. Writes to app and project scopes need an
// elevated caller (Kind.Elevated); NATS permissions enforce it, not this
// package, and agent privacy holds because an agent's entries live in its
// own aggregate.
//
// # Command flow
//
// The scope actor owns a *State and handles each command as
//
//	Decide* (returns events or a *Rejection) -> append the events to the
//	log as one batch -> State.Apply(meta, events)
//
// Decide* never mutate the state; a rejected command leaves it
// byte-identical. Every mutating decision first emits EXPIRE tombstones for
// the entries due at Env.NowUnixNano, so no decision treats an expired entry
// as live; the new version of the written key, when there is one, is the
// batch's last event. The actor also schedules a timer at NextExpiry and
// appends DecideExpire's batch: expiry is an event, never a silent
// disappearance.
//
// # Determinism rule
//
// Every value a decision takes from outside the state — the time, who
// writes, the compressed bytes, which entries were evicted or expired — is
// recorded in the events: each EntryChanged carries the full Entry of the
// new version in its stored form. Apply copies those values into the
// snapshot: it never reads a clock, compresses or applies a policy (its one
// bound, MaxVersionsPerKey, only drops the oldest versions of a key, like
// the bound on recent_commands). Replaying the same events from the same
// snapshot gives byte-identical snapshots (proto.MarshalOptions{
// Deterministic: true}).
//
// # Keys and entries
//
// A key is 1..256 bytes of [A-Za-z0-9_.:/@-] that does not start with '.',
// '/' or ':' (ValidateKey). Every change of a key is a new version (1, 2,
// ...), tombstones included: DELETE, EXPIRE and EVICT write a tombstone
// (deleted set, no value, no expiry; type, importance, tags, metadata and
// created_* kept from the version it ends). created_* are those of the
// first version of the current "life" (since the key was last absent);
// updated_* are the writer and time of the version. Values are at most
// MaxValueBytes; from CompressThreshold bytes they are stored
// zstd-compressed when that is smaller (EncodeValue: SpeedFastest from
// FastLevelFrom bytes, SpeedDefault below); readers always get the original
// bytes (Plain). A State keeps the original bytes of the compressed current
// values it was asked for or just wrote (at most MaxPlainCacheBytes, never in
// the snapshot), so a get does not decompress again. A value that does not decode to exactly its
// recorded size is an error (ErrCorruptValue), never a panic.
//
// Expected versions: unset or -1 = any; 0 = the key must not be live (a
// tombstone counts as absent); N = the current version, tombstone or not,
// must be N; otherwise 409 "expected version N, current is M".
//
// Expiry: ttl_seconds > 0 expires the entry that many seconds after the
// write; 0 means, for episodic entries, the scope's episodic_ttl_seconds
// (0 there: the node's default, Env.EpisodicTTLSeconds, 90 days unless
// configured; -1: never), and never for other types. The expiry is
// decided at the write and recorded in its event. An entry is expired when
// 0 < expires_unix_nano <= now: reads hide it (Get of the current version,
// List) even before its EXPIRE tombstone is stored. A rollback counts the
// TTL of the version it restores again from now; a published copy keeps
// its source's expiry.
//
// End: DecideEnd tombstones every live entry (change END) when the
// session of a session scope ended; the actors send it on TERMINATE and
// ARCHIVE.
//
// Bound: with config.max_entries > 0, a write that would make a key live
// beyond the bound (and a configure that lowers it) first evicts the least
// important live entries, then the least recently updated, then the
// smallest keys — never the key being written. A write with Env.EvictOwn
// (a tenant's write to a shared scope) evicts only entries its writer wrote
// last, and is refused 413 max_entries when those do not make room.
//
// # Concurrency
//
// A State has one owner and no locks: reads must not run concurrently with
// Apply. EncodeValue, DecodeValue and Plain are safe for concurrent use.
package sharedmem
