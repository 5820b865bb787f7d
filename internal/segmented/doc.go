// Package segmented is the segmented-memory model of one agentmem session:
// pure, deterministic Go with no I/O, no goroutines and no clock.
//
// # Command flow
//
// The session actor owns a *State and handles each command as
//
//	Validate* -> Decide* (returns events or a *Rejection) -> append the
//	events to the log as one batch -> State.Apply(meta, events)
//
// Decide* leave the state unchanged: they simulate their events on the
// state itself inside a transaction that is always rolled back (in
// O(changes), see txn), and return them. A rejected command leaves the
// state byte-identical.
//
// # Cost
//
// Apply, and the checks and simulations of Decide*, cost what the command
// changes, not what the session holds: L1 grows in place (amortized O(1)
// per message), compression replaces the oldest run in place, and the
// lookups DecideAppend needs (known message ids, tool call ids in use, open
// tool calls) and the per-layer token totals are derived data kept in the
// State, maintained by Apply and recomputed from scratch only by
// FromSnapshot. They are never stored in the snapshot. (Choosing a
// compression run still scans L1 for tool-call groups, and a summary lists
// every message id it covers.)
//
// # Determinism rule
//
// Every value a decision takes from outside the state — the time, token
// counts, summary texts, which messages were summarized or evicted, which
// schemas were pushed out of the LRU, which tool-result references were
// dropped — is recorded in the events. Apply only copies those values into
// the snapshot: it never tokenizes, summarizes, reads a clock or applies a
// policy. Replaying the same events from the same snapshot therefore gives
// byte-identical snapshots (proto.MarshalOptions{Deterministic: true}), and
// changing a policy changes the future, never the past.
//
// # Layers
//
// Context returns, in order: ROM (system prompt, patterns, backend schema as
// one system message), Kernel (tool definitions sorted by name, the schema
// cache in LRU order, references to the MaxToolResultRefs most recent tool
// results, facts sorted by key; each as a compact system message), L2
// (summaries of evicted L1 runs, append-only until archived), promoted
// (messages recalled from swap; empty for now) and L1 (recent messages
// verbatim, plus in-place summaries of the oldest runs).
//
// A message's tokens are its content, tool call names and arguments, plus
// MessageOverheadTokens; ROM, Kernel items and summaries are counted the
// same way from their rendered text. Counts are taken once, in Decide, with
// the offline cl100k_base tokenizer, and stored.
//
// # Invariants (checked after every command by the property tests)
//
//   - Budget: tokens(ROM+Kernel+L2+promoted+L1) <= max_context_tokens -
//     reserved_output_tokens. Decisions keep the stronger PlannedTokens
//     within the budget (the ROM counted as the larger of the active and the
//     pending ROM) so activating a pending ROM never overflows it.
//   - A tool call is never separated from its results: an assistant message
//     with tool calls and the tool messages answering them (parallel calls
//     included) are either all verbatim in L1 or all covered by summaries.
//   - The latest user message, and everything after it, is verbatim in L1.
//   - Every L1 entry is newer (higher seq) than every L2 summary.
//   - The ROM never changes within a turn: a new ROM version (RomUpdated)
//     becomes active (RomActivated) only in the batch of the user message
//     that starts the next turn.
//
// # Compression
//
// After the messages of an append are counted, the usage (PlannedTokens /
// budget) selects a step of the session's CompressionProfile: below
// summarize_pct nothing; from summarize_pct the oldest summarize_batch L1
// entries become one in-place summary (L1Summarized); from
// summarize_more_pct the oldest summarize_more_batch; from evict_pct (or
// above the budget) the oldest evict_batch leave L1 and their summary goes
// to L2 (L1Evicted). Steps repeat until the usage is below summarize_pct or
// nothing can be compressed. A run is widened when its summary would not be
// strictly smaller than what it covers. L2 is archived (L2Archived) when it
// exceeds max_l2_tokens, or when the budget cannot hold otherwise. If the
// budget still cannot hold, the command is rejected with 413.
//
// # Lifecycle
//
// CREATED -> ACTIVE (first append) -> (PAUSED <-> ACTIVE)* -> TERMINATED
// -> ARCHIVED. Appends are accepted in CREATED and ACTIVE; Kernel and state
// changes until TERMINATED; ARCHIVED is read-only. Terminate clears the
// "session:" keys.
//
// # Concurrency
//
// A State has one owner and no locks; even reads (Context caches its
// reply) must not run concurrently with each other or with Apply. The
// Tokenizer from NewTokenizer is safe for concurrent use.
package segmented
