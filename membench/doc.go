// Package membench is agentmem's memory-quality benchmark, printed as
// markdown tables (Tables selects them):
//
//   - the held-out extraction table (RunHeldOutExtraction): the extractor
//     scored on conversations written by hand apart from it
//     (membench/heldout), printed first;
//   - the cross-session mode (RunCross, cross.go): a user comes back in a
//     new session; is what they said before in the context? Multi-session
//     conversations read from a data set (LoadLoCoMo, or the held-out set),
//     each sitting a session of one user on a real node, terminated and
//     consolidated; each question the first message of a new session.
//     Beside it a FTS5 RAG over the user's whole history, agentmem's own
//     user-scope search as a tool and the full transcript;
//   - the question mode on the same real conversations
//     (RunDialogueQuestions): ingested whole into one session, then each
//     question appended, as below;
//
// and two runs in process, deterministic, on generated conversations:
//
//   - the question mode (RunQuestions, question.go): LoCoMo-like
//     conversations (internal/dialoggen) ingested whole, then each question
//     appended as the user asks it, agentmem with the server's defaults
//     beside a sliding window, two window + FTS5 RAGs and the full
//     transcript. It is the benchmark that can lose: its questions
//     paraphrase their evidence, ask about time and corrections, and stay
//     in the session;
//   - the classic run (Run): a long multi-session work conversation with
//     planted facts and known answers (internal/convgen), replayed into
//     agentmem's session model and search projection beside a window and
//     FTS5. Its questions share words with their answers.
//
// # Running it
//
//	make bench-memory                 # go run ./cmd/membench: every table
//	make bench-memory LOCOMO=/path/to/locomo   # and the public conversations'
//	go run ./cmd/membench -mode question
//	go run ./cmd/membench -mode cross -sources heldout   # ~1.5 min
//	go run ./cmd/membench -mode cross -sources locomo -locomo DIR -cross-questions 5
//	go run ./cmd/membench -mode question -sources locomo -locomo DIR
//	go run ./cmd/membench -mode extraction -sources heldout
//	go run ./cmd/membench -mode extraction -sources heldout-fresh   # the second set
//	go run ./cmd/membench -mode extraction -sources heldout-third   # the third set
//	go run ./cmd/membench -mode question -sources heldout-long      # the long conversations
//	go run ./cmd/membench -mode classic -seed 7 -budgets 1024,8192 -profiles balanced
//	go test -run '^$' -bench MemoryQuality -benchtime 1x ./membench/
//
// # The cross-session mode
//
// Per conversation one user id and one agent id. Each sitting is a session
// of both, created with the sitting budget (the largest question budget);
// its turns are appended one per append request, speaker 0 as user
// messages and speaker 1 as assistant messages, each content prefixed
// with the speaker's name ("Noor: …", so the recalled section and the
// baselines show who said it), said_unix_nano at the sitting's date (a
// minute apart). The session is terminated and the run waits for its
// consolidation (the consolidated/<session> marker in the user's scope)
// before the next sitting. Then each question (as written, one day after
// the last sitting) is the first user message of a new session at each
// budget; the context is read rendered for OpenAI and scored: every
// evidence turn's text in it (and any), every content word of the gold
// answer a word of it, and for temporal questions whether each evidence
// turn found is printed with its sitting's day near it (ISO, "8 May 2023",
// "May 8, 2023"). Each question is asked twice (two new sessions): the
// number of contexts that differ is printed. Every question session is
// erased once read, so each question sees only the sittings.
//
// The baselines, at the same budget (the project's tokenizer, the
// session's per-message overhead): SQLite FTS5 bm25() over every turn of
// the user's history, hits filling the room in rank order with their days;
// agentmem's SEARCH_SCOPE_USER search, top 20, as a tool result while it
// fits; the full transcript with days, over any budget (the ceiling).
// Where agentmem's evidence went: verbatim in the new session's own
// messages (L1), in the recalled section, a memory entry consolidated from
// the turn, a summary holding the answer's words, among the user-scope
// search's top 20 but not chosen, or not even there.
//
// # The question mode
//
// Three conversations (seeds -seed, -seed+1, -seed+2) of ~640 turns and
// ~21k tokens each, ~130 end questions and ~30 continuity questions each
// (see internal/dialoggen for the conversation, the categories and the
// Needs of a question). Per conversation, at each budget:
//
//   - agentmem (defaults): the pure session model created as the server
//     creates a session with only max_context_tokens and
//     reserved_output_tokens (profile "", Assembly nil: the context
//     assembler on with its default shares), driven as the classic run's
//     "+ recall" row: DecideAppendWith with the candidates of
//     agentmemMemory.candidates (the projection searcher's hits for the
//     latest user message), then Apply. Every turn is appended with its
//     said time. After the conversation, each question is appended for
//     good, in order (earlier questions stay in the session, and in the
//     search index), and the context read right after.
//   - sliding window; window + FTS5 RAG 80/20 and 50/50: the same transcript,
//     questions included. The newest messages fill 100 / 80 / 50 % of the
//     budget (after the system prompt); the FTS5 bm25() hits for the
//     question (the RAGHits best, over what was said before it) fill the
//     rest, best first, without duplicates; all rendered in conversation
//     order. A tool result whose call is not kept is dropped. Never over
//     the budget (checked in the run).
//   - full transcript: everything, over the budget: the ceiling.
//
// Measures: evidence (every evidence turn's content verbatim in the
// context), any evidence (one of them), answer (one string of every Needs
// group: a time question also needs the sitting's date, which only the
// recalled section's header or a sitting's first turn shows), stale (a
// correction question whose context holds an old value and not the
// current one), per category. Where agentmem's evidence went: each
// evidence turn is verbatim in L1 (or promoted), in the recalled section,
// only in a summary (an L1/L2 summary holds its answer string), among the
// candidates of the question (agentmemMemory.lastHits) but not chosen, or
// never among them. Continuity: each continuity question is appended to a
// copy of every agentmem session (and to the window's transcript) right
// after the task it is about; agentmem must keep them at 95 % or more.
// Search: the question as the query over every message said before it,
// the projection's Store.Search beside FTS5; a hit is any evidence turn
// within the first k. The run takes about 10 seconds on 2 cores.
//
// # The classic run
//
// The command prints the seed and the tables; the Go benchmark reports the
// same figures as metrics (b.ReportMetric). Every figure except the
// latencies is a function of the Config: same seed, same table. The
// default run (6 sittings, ~1,800 messages, ~58k tokens, ~260 questions)
// takes about 15 seconds on 2 cores. The package tests run a small
// conversation in about a second.
//
// # The conversation
//
// See internal/convgen: sittings days apart, small talk and long filler
// answers, project facts (budgets, leads, deadlines, decisions, ticket ids,
// commitments), personal facts, corrections that supersede earlier values,
// tool calls with JSON results (parallel calls too) whose values are facts
// and change on a later lookup, and questions asked at checkpoints and at
// the end, each with its answer string(s) and the index of the latest
// message holding the answer.
//
// The conversation is appended one append request at a time: the user
// message, then the assistant's reply with its tool calls and results.
// Questions are probes taken between appends; they are never appended.
//
// # (a) Answer in the context
//
// For each budget (max_context_tokens − reserved_output_tokens) and each
// Memory, the share of questions whose answer string is in the context
// that would be sent when the question is asked: in any message content or
// tool call of the context, summaries included. It is a ceiling on what an
// LLM could answer from the context (no LLM is run), and it counts an
// answer in a summary as present.
//
//   - agentmem (<profile>): the pure session model (internal/segmented)
//     driven as the session actor drives it — DecideCreate with the budget
//     and profile, then DecideAppend and Apply per append request, with the
//     offline cl100k tokenizer and the default (extractive) summarizer — and
//     its Context() as the context. Appends it rejects (413) are counted;
//     their messages never enter it. One row per compression profile, with
//     the context assembler off ("recall off"); the first profile is the
//     default.
//   - agentmem (<default profile> + recall): the default session, context
//     assembler on. At each append holding a user message the
//     candidates are the 20 best hits of the projection searcher of (b) for
//     that message (as the node's swap search offers them, over the
//     messages said before it), and DecideAppendWith chooses the recalled
//     section. A question is asked as the user would ask it: appended to a
//     copy of the session, with the candidates of its own text, and that
//     context measured. There are no scope entries in the conversation, so
//     the memory section stays empty here (node tests cover it).
//   - sliding window: the system prompt and the most recent messages that
//     fit the same budget, each counted as the model counts it (content,
//     tool call names and arguments, plus MessageOverheadTokens; the tests
//     check the counts are the model's). Tool results whose call fell out of
//     the window are dropped (a chat API refuses them).
//
// Columns: end (every fact, after the last message), checkpoints (the
// sampled questions along the way), stale (of the questions about a
// corrected fact, the context holds an old value and not the current one),
// answer no longer verbatim (of all questions whose answer turn is no
// longer verbatim in the context when asked — not in L1 or promoted, or
// outside the window — the share whose answer is in the context anyway,
// in a summary or recalled), rejected appends, and the mean make-up of the context over the
// checkpoints: tokens used, verbatim messages, and tokens of verbatim
// messages / summaries (in place in L1 and in L2) / ROM and Kernel (system
// prompt, references to recent tool results, facts). A second table splits
// all questions by how many tokens were said after the answer turn, cut at
// the budgets: the window holds an answer exactly when it is recent enough,
// so this shows where each memory keeps or loses facts.
//
// # (b) Search recall
//
// The question's text is the query; the corpus is every message said
// before the question (the searchers are fed the same appends and queried
// at each checkpoint). A hit is the answer turn — the latest message
// holding the current answer — within the first k results; recall@k is the
// share of hits, MRR the mean reciprocal rank within the largest k.
//
//   - agentmem BM25: the real read path. A session model decides each
//     append; its events are packed, encoded and decoded as a log record
//     (events codec), applied by projections.Store.ApplyBatch to a bbolt
//     file in a temporary directory (as the projector applies them), and
//     queried with projections.Store.Search in SESSION scope (the
//     analyzer and BM25 of internal/swap: Snowball stemming, stop words
//     kept, idf = ln(1 + (N − df + 0.5)/(df + 0.5)), k1 = 1.2, b = 0.75).
//   - SQLite FTS5 bm25(): the same messages' content (messages without text,
//     a tool call alone, are no document in either index) in an in-memory
//     FTS5 table with tokenize = 'porter unicode61', ranked by bm25()
//     (k1 = 1.2, b = 0.75; FTS5's idf is ln((N − n + 0.5)/(n + 0.5)), about 0
//     for very common words). The query is every word of the question,
//     quoted, joined by OR (a bag of words, like agentmem's; FTS5 would AND
//     unquoted words). SQLite is modernc.org/sqlite (pure Go); only this
//     package imports it, never the node.
//
// # (c) Summarizer
//
// segmented.Extractive (the default summarizer) on its own, on consecutive
// spans of n messages of the conversation, with three limits: the one the
// model passes (min(summary_max_tokens = 400, covered − 5)), and covered/5
// and covered/10 (the 5× and 10× compression the design targets).
// Compression is the tokens of the spans over the tokens of their summaries
// (as the model counts them); key-fact retention is the share of the fact
// values stated in a span still in its summary. The rows "made in the run"
// are the summaries the session model made with the default profile at each
// budget: the compression of each step (its covered_tokens, older summaries
// included, over its tokens), the mean number of messages a summary covers,
// and the retention of the facts of the messages it condensed for the
// first time.
//
// # (d) Latency
//
// For each agentmem row: DecideAppend + Apply of one append request (with
// recall, plus the candidate search of an append holding a user message),
// and the first Context() after it (built, not cached), in µs (mean, p50,
// p99) over the run. In process, no log, no NATS. These vary between runs.
//
// # Extending it
//
// A Memory is anything that takes the appends and returns a context for a
// question; Context receives the question, which is how agentmem with
// recall on is one more Memory beside the rows it should beat, with the
// same metrics. A Searcher is anything
// that indexes the appends and ranks message indexes for a query (a
// reranker, vectors).
package membench
