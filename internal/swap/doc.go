// Package swap holds the pure, storage-free parts of full-text search over the
// swap (the archive of every message and L2 summary): the analyzer that turns
// text into index terms, BM25 scoring, top-k selection and the optional
// Reranker interface. The BM25 index itself (terms → postings) lives in
// bbolt, in projections/; it must analyze documents with Analyze (or
// TermFreqs) and queries with QueryTerms so both sides agree on terms.
//
// # Analyzer
//
// Analyze segments text into words (Unicode UAX #29), lower-cases them and
// stems Latin-script words with the English Snowball (Porter2) stemmer,
// after mapping the past forms of common irregular verbs to their base
// ("led" → "lead", "went" → "go": irregularVerbs lists them and the forms
// left out). Runes
// of CJK scripts (Han, Hiragana, Katakana, Hangul) are single-rune terms
// (unigrams: a query "数据库" matches documents holding 数, 据 and 库, in any
// order). Stop words are kept in documents (see Queries for queries). Terms
// longer than MaxTermBytes are dropped.
//
// Decisions on punctuation, which follow UAX #29:
//
//   - Hyphen splits: "customer-id" → [custom id]. A query for "customer id"
//     matches "customer-id" and the reverse.
//   - Underscore (and all connector punctuation) splits, though UAX #29
//     keeps it inside words: "customer_id" → [custom id], so the keys of a
//     JSON tool result ("open_balance") match a question's words ("open
//     balance"), as SQLite FTS5's unicode61 tokenizer does.
//   - Apostrophe between letters joins: "O'Brien" → [o'brien], "don't" →
//     [don't]; typographic apostrophes (’) are folded to ' first, so "O’Brien"
//     and "O'Brien" are the same term. A query "Brien" does not match
//     "O'Brien". Leading apostrophes and a trailing possessive "'s" are
//     removed by the stemmer: "customer's" → [custom].
//   - Period, comma between digits join: "3.14", "1,000" stay whole; a colon
//     or space splits: "error: 3706" → [error 3706].
//   - Emoji and other symbols are not terms.
//
// There is no query language: QueryTerms accepts every string (quotes,
// '*', AND/OR/NOT, colons are plain text or punctuation) and returns a
// possibly empty, duplicate-free list; an empty list means "no match".
//
// Changing the analyzer changes the terms of every document: the BM25
// projection must then be rebuilt (bump the projection schema version).
//
// # Queries
//
// ParseQuery analyzes a query as QueryTerms does and adds two things a
// search may use; neither changes the index:
//
//   - A stop flag per term (IsStopTerm): English stop words and question
//     words ("what", "did", "you", "when"; the list is stopWords, matched on
//     their stems). Query.Content drops them when the query has another
//     term and keeps them otherwise, so "what?" alone still searches.
//     Dropping them matters because BM25's idf does not make them harmless
//     in a chat archive: short chit-chat turns ("What did you do?") are full
//     of them and, being short, outrank the turn that holds the answer.
//   - The calendar days the query names (QueryDates: "8 May 2023",
//     "2023-05-08", "May 2023"), in UTC, for a search that can match the day
//     a message was said.
//   - Whether the query is a question (IsQuestion), so that a search can
//     rank turns that ask below turns that tell (QuestionShare).
//
// Proximity scores how close the query terms occur in a document (BM25TP),
// for re-ranking the best BM25 hits by reading their text: no positions are
// indexed. ProximityText does the same from the text without stemming the
// words that cannot match, and ProximityBound bounds the score from term
// frequencies alone, so a caller can skip reading a hit that cannot move
// far enough.
//
// # Analyzer performance
//
// The projection analyzes every message, so Analyze has two fast paths that
// do not change its output (tests compare it with the plain pipeline, see
// fastpath_test.go):
//
//   - Pure-ASCII stretches of text (cut after ASCII whitespace, where UAX #29
//     always has a boundary that no rule looks across) are segmented by a
//     hand-written ASCII version of the UAX #29 rules instead of uniseg, and
//     lower-cased without allocating. Other stretches go through uniseg.
//   - Stems are cached (stemWord is a pure function): a process-wide
//     cache of word → stem in 64 shards, each holding two generations of at
//     most 64 KiB; when the current generation of a shard is full it
//     replaces the old one, and a hit in the old one is copied to the
//     current one. Memory is counted as the bytes of the word and its stem
//     plus an estimated 80 bytes of map overhead per entry, so the cache
//     holds about 64 × 2 × 64 KiB = 8 MiB at most (some 85k words of typical
//     length) whatever the input. Words longer than 128 bytes are never
//     stemmed (see MaxTermBytes) and thus never cached.
//
// Terms returned by Analyze, QueryTerms and TermFreqs may share memory with
// the input text and with the stem cache (strings are immutable).
//
// # BM25
//
// For a corpus of N documents of average length avgdl (in terms), a term t in
// df(t) documents, and a document D of |D| terms in which t occurs tf times:
//
//	idf(t)     = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//	score(D,Q) = Σ_{t ∈ Q} idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|D|/avgdl))
//
// with k1 = 1.2 and b = 0.75 by default (DefaultBM25). This idf (the Lucene
// variant) is always positive, so a very common term never lowers a score.
// Q is QueryTerms(query): a term repeated in the query counts once.
//
// # Ranking
//
// TopK keeps the k best hits, ordered by score descending and DocID
// ascending on equal scores, so results are deterministic.
package swap
