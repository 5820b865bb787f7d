// Package consolidation runs consolidation: what a session's user said
// becomes long-term memory. A run reads the session's messages (after
// the read model reached the session's last sequence) and the facts the
// user's scope holds, extracts with an Extractor (internal/consolidate,
// deterministic, or internal/llmextract with it as fallback), and writes,
// each as an ordinary versioned entry through the scope's actor:
//
//   - semantic facts and instructions into user:<the session's user>;
//   - episodes ("I tried …") into agent:<the session's agent>, similar
//     ones summarized (episodes.go);
//   - the session's dated digest, episode/session/<session>, into the
//     user's scope (else the agent's): a few of the user's most
//     informative sentences with the sitting's date;
//   - last, the marker consolidated/<session> in the same scope.
//
// The targets come from the session itself, never from a request body. A
// run runs beside the actors — on demand (Consolidate), in a bounded
// background queue after a termination or every N user turns (Later), and
// at start for the sessions a crash interrupted (Resume) — never inside an
// actor. Its outcome is entries in the log, so replay never extracts
// again.
//
// # Ports
//
// A run reaches the scope actors through Scopes and the sessions (their
// actors and the read model) through Sessions, both declared here and
// implemented over the actors by ActorPort (which package api builds from
// its dispatchers); a port's error wraps ErrNotFound or ErrConflict where
// a run must tell those apart.
//
// # Review
//
// The proposals a run files for review in a scope whose conflict strategy
// is "review" are listed and settled by Conflicts and Settle (review.go),
// through the same port; package api serves them as
// mem.v1.scope.<kind>.<id>.conflicts and .settle.
//
// # Exactly once
//
// Each write's command id is derived from what it writes (session, key,
// value, source messages: CommandID) and kept in the entry's metadata. A
// repeat — a crash mid-way, a second trigger — finds the command in the
// key's history, or the value already current, and writes nothing; a
// write that finds its key moved by another writer reads it again once.
//
// # Knowing that a run finished
//
// The marker is written after every other entry of the run, so its
// existence says the run finished. Consolidate's reply says so itself
// (ConsolidateReply.done, with the marker, the digest and how many
// entries it wrote). A terminate's reply carries the marker to expect
// (StatusReply.consolidation: scope, key, and the watch subject that
// reports its write), since that run happens after the reply: a client
// reads the key until it exists, or watches the scope for it. The
// marker's value is JSON: {"session","seq","facts"}.
//
// # Metadata
//
// Every entry a run writes names its session with SourceSessionKey
// ("agentmem.source_session") and, when the session has a user, the user
// with SourceUserKey: a session or user erase finds them by these. Facts
// also carry when they were said (SaidKey) and the date they name
// (DateKey), their subject, attribute and value, confidence, extractor,
// source messages and command id. Entries written before carry the plain
// "source_session" (LegacySourceSessionKey), which runs no longer write.
package consolidation
