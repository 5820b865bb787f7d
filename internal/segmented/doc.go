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
// compression run still scans L1 for tool-call groups.)
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
// (summaries of older L1 runs, FIFO: appended at the end, archived from the
// front), promoted (messages recalled from swap) and L1 (in-place summaries
// of the oldest runs, then recent messages verbatim).
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
//   - Every L1 entry is newer (higher seq) than every L2 summary; in-place
//     summaries lead L1; a condensed summary can only lead L2.
//   - L2 holds at most max_l2_tokens.
//   - The ROM never changes within a turn: a new ROM version (RomUpdated)
//     becomes active (RomActivated) only in the batch of the user message
//     that starts the next turn.
//
// # Compression
//
// Compression is a conveyor: verbatim L1 messages -> in-place L1 summaries
// -> L2 summaries (FIFO) -> swap, where a condensed summary of the archived
// ones stays at the head of L2. A summary is made once, from verbatim
// messages only (Summarizer never sees a summary), and never re-summarized
// with newer messages.
//
// After the messages of an append (or a Kernel change) are counted, and
// when the usage u = PlannedTokens / budget calls for it (above the
// profile's start_pct; when start_pct is 0, at summarize_pct), steps run
// until u < summarize_pct and the budget holds. Each step, by pressure:
//
//   - summarize_pct <= u < summarize_more_pct: the oldest summarize_batch
//     verbatim L1 messages become one in-place summary (L1Summarized);
//   - summarize_more_pct <= u < evict_pct: the same with summarize_more_batch;
//   - u >= evict_pct, or over the budget, or nothing left to summarize while
//     over the budget: the oldest evict_batch L1 entries move to L2
//     (L1Evicted): in-place summaries as they are, the verbatim messages
//     among them as one new summary of those messages;
//   - over the budget with nothing left to move: the oldest L2 summaries
//     are archived (L2Archived), two condensed into one when that is
//     smaller, else one.
//
// A run never splits a tool call from its results (the boundary moves to
// take or leave the whole group; a group still waiting for a result stops
// the run) and never reaches the latest user message. A run is widened when
// its summary would not be strictly smaller than what it covers.
//
// After every step two shares are restored. L1's share: the in-place
// summaries together hold at most summary_max_tokens (plus overhead); the
// oldest beyond it move to L2 as they are (L1Evicted with only
// moved_summary_ids). L2's share: when L2 exceeds max_l2_tokens, its oldest
// summaries, the fewest that bring it back within the cap (at least two),
// are archived to swap — still searchable, and recallable by id — and
// condensed into one coarser summary (at most summary_max_tokens and half
// of max_l2_tokens) that takes their place at the head of L2, listing them
// in summary_ids. The condensed summary is itself the oldest L2 entry, so
// the next archive condenses it again with the next oldest: recent detail,
// older gist. If the budget still cannot hold, the command is rejected
// with 413.
//
// Summaries keep facts: the default Summarizer (Extractive) selects units
// (sentences, long ones trimmed to their salient clauses) by salience, not
// by age — decisions and commitments, open questions, ids, numbers, dates,
// names, tool calls and outcomes — drops greetings and filler even when
// there is room, and drops units that repeat a kept one. A summary's body
// is capped at a third of what it covers (summaryTarget); on chatty text it
// is about a ninth, with every planted fact kept (see
// TestSummarizerRetentionAndRatio for the figures). Its text starts with
// the range it covers ("Summary of messages 12-19:"), and the Summary
// lists the ids of the messages (or, condensed, of the summaries) it
// covers.
//
// Every outcome is in the events — the summary texts and token counts,
// which summaries moved, which were archived and the condensed text — so
// Apply replays them without a policy. Logs written before moved summaries
// and condensed summaries existed (L1Evicted covering summaries and
// messages alike, L2Archived clearing all of L2) apply unchanged.
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
