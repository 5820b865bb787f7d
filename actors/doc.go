// Package actors runs one protoactor-go actor per session aggregate.
//
// An actor owns its session's state; nothing else holds a pointer to it.
// Handling a mutating command is always the same pipeline:
//
//  1. validate: a bad request is a 400 naming the field;
//  2. decide: the pure model (internal/segmented) returns events or a
//     rejection (404, 409, 413);
//  3. append the events as one EventBatch message to the log, fenced by the
//     stream sequence of the aggregate's last message and deduplicated by the
//     command id. On a conflict the actor reloads from the log and decides
//     once more, then answers 409. On any other failure it answers 503 and
//     panics, so its supervisor restarts it with backoff and it recovers from
//     the log: what was not stored is never applied;
//  4. apply the stored events and reply with the new version and sequence.
//
// Before deciding, a command whose id (scoped to its writer) was stored
// before is looked up (commands.go: the model's last 64, the actor's ring of
// 512, the projection's command index). It is answered as a duplicate with
// its original result (an append's message ids and tokens read back from the
// stored batch) when its request digest (CommandDigest, stored in the batch
// and kept beside the id in all three places) matches the retry's, and
// refused with 409 naming command_id when it does not. A command stored
// without a digest (older logs) is answered as a duplicate.
//
// Recovery loads the latest snapshot (keep-last-one per aggregate) and
// replays the log tail after it. The log must still end the aggregate's
// subject at or after the snapshot's sequence (and what the actor saw
// stored): if it does not (purged, deleted and recreated, an older log
// restored), recovery answers 503 and logs an error rather than letting
// every append conflict (409) forever; a live state ahead of the snapshot
// becomes the snapshot, so no later activation recovers the aggregate as
// new from the emptied subject. Recoveries run at most
// Config.MaxConcurrentRecoveries at a time. An idle actor snapshots and
// passivates after Config.IdleTimeout. The Directory finds or spawns the
// actor for an id; it sends under its lock, and a passivating actor leaves the
// directory before it poisons itself, so a message is never sent to a stopped
// actor: those already queued are handled before the poison pill.
//
// Slow work (an LLM rewrite of a summary) runs beside the actor and comes
// back as a command whose events are decided against the then current state.
//
// Retention is decided by the owning actors and stored as
// events: a scope actor gives episodic entries written without a ttl the
// scope's episodic TTL or Config.EpisodicTTL and stores EXPIRE tombstones on
// its timer; a session actor that stores (or finds) TERMINATED or ARCHIVED
// after a status request sends its session:<id> scope EndSessionScope, whose
// END tombstones are stored before the request is answered. Archiving after
// a bound is the node's sweep sending ARCHIVE (node/retention.go).
package actors
