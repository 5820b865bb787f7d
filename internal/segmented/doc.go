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
// The plan of a user message (the context assembler, plan.go) is
// incremental too: the planner keeps what it needs of each L1 entry, the
// order of the L1 spans valued by recency alone, and the content words of
// the summaries from one user message to the next (plan_cache.go,
// plan_order.go), and only the summaries and what the candidates touch
// become parts of the allocation; the tokens the plan shows are totals
// kept by Apply (shown.go). Its choices are those of the allocation over
// a part per L1 span, which the tests keep as the reference
// (TestPlanMatchesReference).
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
//   - A summary covers verbatim messages only, never an earlier summary
//     (only the condensed summary at the head of L2 condenses summaries).
//   - Compression starts only when the usage passes the profile's start
//     level: under fill, only when the command would not fit.
//   - The ROM never changes within a turn: a new ROM version (RomUpdated)
//     becomes active (RomActivated) only in the batch of the user message
//     that starts the next turn.
//
// # Compression
//
// Compression is a conveyor: verbatim L1 messages -> (in-place L1
// summaries) -> L2 summaries, FIFO -> swap, with one condensed summary of
// everything archived at the head of L2: recent detail, older gist. A
// summary is made once, from verbatim messages only (a Summarizer never
// sees a summary), and never re-summarized with newer messages; only the
// condensed summary is condensed again, with the next summaries archived.
//
// When. After an append, a Kernel change or a promotion, compression starts
// when the usage u = PlannedTokens / budget exceeds the profile's start_pct
// — for the default profile, fill, 100 %: only when the command would not
// fit, so a conversation that fits is never compressed — or, for the
// design's profiles (start_pct 0: balanced 70/80/85 %, data_intensive,
// conversational), when u reaches summarize_pct. Steps then run until u <
// summarize_pct and the budget holds.
//
// What. The pressure level of u picks each step:
//
//   - summarize_pct <= u < summarize_more_pct: the oldest summarize_batch
//     verbatim L1 messages become one in-place summary (L1Summarized);
//   - summarize_more_pct <= u < evict_pct: the same, summarize_more_batch;
//   - u >= evict_pct (over the budget included): the oldest evict_batch L1
//     entries move to L2 (L1Evicted): in-place summaries as they are, the
//     verbatim messages among them as one new summary of those messages;
//   - over the budget with nothing left in L1 to compress: the oldest L2
//     summaries are archived and condensed (L2Archived; the fewest that
//     free enough).
//
// A profile that starts on demand (start_pct set, as fill) compresses only
// what is needed: a step takes, of its batch, the fewest oldest messages
// (at least two) whose summary, at its cap, brings u below summarize_pct.
// The design's profiles always take their batch.
//
// A run never splits a tool call from its results (the boundary moves to
// take or leave the whole group; a group still waiting for a result stops
// the run) and never reaches the latest user message. A run is widened when
// its summary would not be strictly smaller than what it covers.
//
// Shares, restored after every step. L1's: the in-place summaries together
// hold at most summary_max_tokens (plus overhead); the oldest beyond move
// to L2 as they are (L1Evicted with only moved_summary_ids). L2's: when L2
// exceeds max_l2_tokens (default: 5,000, at most a quarter of the budget),
// its oldest summaries are archived to swap — still searchable, and
// recallable by id — the fewest (at least two) that, with the one coarser
// summary condensing them, bring L2 back within the cap. The condensed
// summary (at most summary_max_tokens and half of max_l2_tokens) takes
// their place at the head of L2 and lists them in summary_ids. Being the
// oldest L2 entry, it is condensed again with the next oldest at the next
// archive: until it reaches its cap it keeps nearly everything, from then
// on the most salient units of all that was archived. If the budget still
// cannot hold, the command is rejected with 413.
//
// A worked example (steps 1 and 2 are TestWorkedExample): the default
// profile (fill: start 100 %, levels 90/94/97 %, batches 4/6/8), a budget
// of 1,000 tokens (so max_l2_tokens and summary_max_tokens are 250), a ROM
// of 17 tokens, one message of 100 tokens per append, roles alternating.
//
//  1. Messages 1-9 fit (917 tokens, 92 %): nothing is compressed.
//  2. Message 10 would make 1,017 (102 %): compression starts, at the evict
//     level. Getting below 90 % needs 118 tokens; of the 8 oldest entries
//     the step takes the fewest whose summary frees that even at its cap
//     (a third of what it covers, plus 12 for its header, plus 4): two
//     messages (200 tokens, cap 82). Messages 1-2 leave L1 as one summary
//     s1 of 42 tokens ("Summary of messages 1-2:" and one line per message
//     with its fact) appended to L2 (L1Evicted). Usage 859 (86 %): done.
//  3. Each time the context would overflow again, the oldest verbatim
//     messages become one more L2 summary: L2 = [s1, s2, s3, ...], FIFO,
//     append-only. L1 keeps the latest messages verbatim.
//  4. When an eviction takes L2 above 250 tokens, its oldest summaries, say
//     s1 and s2, are archived to swap and condensed into c1 ("Condensed
//     summary of messages 1-6:"), the new head of L2: [c1, s3, ..., s7].
//     Next time c1 and s3 become c2, and so on: c covers messages 1..n in
//     at most 121 tokens, the s the recent ones in detail.
//  5. The latest user message, and everything after it, stays verbatim; a
//     tool call and its results are compressed together or not at all.
//
// Under balanced the same session compresses from 700 tokens on, four
// messages at a time into in-place summaries, and holds the usage near
// 70 %: more room left free (for promotions, for bursts), less detail.
// BenchmarkProfilesLongConversation compares the profiles on a long
// conversation.
//
// Summaries keep facts: the default Summarizer (Extractive) selects units
// (sentences, long ones trimmed to their salient clauses) by salience, not
// by age — decisions and commitments, open questions, ids, numbers, dates,
// names, tool calls and outcomes — drops greetings and filler even when
// there is room, and drops units that repeat a kept one. A JSON tool
// result is read field by field, and rows of one shape (a table, a list)
// are kept two at most, with a count of the rest. A summary's body
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
