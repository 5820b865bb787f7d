// Package facts is the fact machinery shared by the extractive summarizer
// (internal/segmented), the search's date reading (internal/swap) and the
// consolidation extractor (internal/consolidate): what a sentence's key facts
// are (ids, numbers, names, dates), which words mark a decision, a change,
// an outcome, small talk or filler, how a unit of text scores, and how text
// splits into sentences and clauses.
//
// The word lists and feature weights are data: text files under data/,
// embedded in the binary and read once at start. A malformed file is a
// programming error and panics at init (the tests read every file).
package facts
