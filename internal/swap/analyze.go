package swap

import (
	"hash/maphash"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// MaxTermBytes is the largest term, in bytes, that Analyze emits. Longer
// tokens (base64 blobs, hashes, minified code) are dropped: they are almost
// never searched for and would bloat the postings keys.
const MaxTermBytes = 64

// maxWordBytes bounds the size of a word handed to the stemmer. The English
// stemmer removes at most a few short ASCII suffixes (far fewer than
// MaxTermBytes bytes in total), so a word longer than this can never yield a
// term of at most MaxTermBytes: dropping it early gives the same result
// without stemming a megabyte-long "word".
const maxWordBytes = 2 * MaxTermBytes

// Analyze turns text into index terms, in text order, duplicates kept.
//
// The pipeline, applied identically to documents and queries:
//
//  1. Invalid UTF-8 byte sequences are replaced by a space (a word break).
//  2. Unicode word segmentation (UAX #29, github.com/rivo/uniseg); segments
//     without a letter or digit (spaces, punctuation, emoji) are skipped.
//  3. Runes of the CJK scripts (Han, Hiragana, Katakana, Hangul) become one
//     term each; the non-CJK runs between them are words of their own.
//     Connector punctuation ('_') splits a segment into words.
//  4. Words are lower-cased (Unicode) and the typographic apostrophes
//     U+2018, U+2019, U+201B become the ASCII apostrophe (U+0027).
//  5. Words whose letters are all Latin script are stemmed with the English
//     Snowball (Porter2) stemmer, stop words left as they are; other words
//     (Cyrillic, Greek, numbers, ...) are kept lower-cased.
//  6. Terms longer than MaxTermBytes are dropped.
//
// Stop words are not removed: BM25's idf gives them little weight.
//
// Consequences worth knowing: a hyphen separates words ("customer-id" →
// "custom", "id"); an apostrophe between letters does not ("O'Brien" →
// "o'brien", "don't" → "don't"), while a trailing possessive is removed by the
// stemmer ("customer's" → "custom"); a period or comma between digits does not
// separate them ("3.14" → "3.14"); an underscore separates words like a
// hyphen ("customer_id" → "custom", "id"), so JSON keys and snake_case
// names match the words they are made of.
//
// Analyze is deterministic and never panics, whatever the input.
func Analyze(text string) []string {
	// One term per about six bytes of text is a fair first guess for prose;
	// append grows the slice if the text is denser or longer.
	terms := make([]string, 0, min(len(text)/6+1, 512))
	forEachTerm(text, func(t string) { terms = append(terms, t) })
	if len(terms) == 0 {
		return nil
	}
	return terms
}

// QueryTerms analyzes a user query as Analyze does and removes duplicate
// terms, keeping the order of first appearance. Every string is a valid
// query: there is no query syntax (quotes, '*', AND/OR/NOT, ':' are plain text
// or punctuation), so the result is a possibly empty list and never an error.
func QueryTerms(query string) []string {
	// About one distinct term per twelve bytes of prose (see TermFreqs).
	terms := make([]string, 0, min(len(query)/12+1, queryTableTerms))
	// Distinct terms so far, by hash: an open-addressing table on the stack
	// (index+1 into terms, 0 = empty), half full at most; a map past it.
	var table [2 * queryTableTerms]int32
	var seen map[string]struct{}
	forEachTerm(query, func(t string) {
		if seen != nil {
			if _, dup := seen[t]; !dup {
				seen[t] = struct{}{}
				terms = append(terms, t)
			}
			return
		}
		i := maphash.String(querySeed, t) % uint64(len(table))
		for ; table[i] != 0; i = (i + 1) % uint64(len(table)) {
			if terms[table[i]-1] == t {
				return
			}
		}
		// i is the empty slot where the probe for t stopped.
		if len(terms) == queryTableTerms {
			seen = make(map[string]struct{}, 2*len(terms))
			for _, u := range terms {
				seen[u] = struct{}{}
			}
			seen[t] = struct{}{}
			terms = append(terms, t)
			return
		}
		terms = append(terms, t)
		table[i] = int32(len(terms))
	})
	return terms
}

// queryTableTerms is how many distinct terms QueryTerms keeps in its table
// before it moves them to a map.
const queryTableTerms = 256

var querySeed = maphash.MakeSeed()

// TermFreqs analyzes a document and returns its term frequencies and its
// length, the number of terms (duplicates counted), which BM25 uses as |D|.
// Counts saturate at math.MaxUint32.
func TermFreqs(text string) (map[string]uint32, uint32) {
	// About one distinct term per twelve bytes of prose; capped so that a
	// huge document does not reserve a huge map up front.
	tf := make(map[string]uint32, min(len(text)/12, 1024))
	var n uint32
	forEachTerm(text, func(t string) {
		if c := tf[t]; c < ^uint32(0) {
			tf[t] = c + 1
		}
		if n < ^uint32(0) {
			n++
		}
	})
	return tf, n
}

// TermFreq is a distinct term of a document and its frequency.
type TermFreq struct {
	Term string
	TF   uint32
}

// AppendTermFreqs is TermFreqs as a list: it appends the distinct terms
// of text with their frequencies to dst, in order of first appearance, and
// returns it with the document's length. Without a map per document it is
// the cheaper of the two for a caller that goes through every term once
// (indexing).
func AppendTermFreqs(dst []TermFreq, text string) ([]TermFreq, uint32) {
	base := len(dst)
	// Distinct terms so far, by hash, as in QueryTerms: index+1 into
	// dst[base:], 0 = empty; a map past queryTableTerms.
	var table [2 * queryTableTerms]int32
	var seen map[string]int
	var n uint32
	forEachTerm(text, func(t string) {
		if n < ^uint32(0) {
			n++
		}
		if seen != nil {
			if j, ok := seen[t]; ok {
				if dst[j].TF < ^uint32(0) {
					dst[j].TF++
				}
				return
			}
			seen[t] = len(dst)
			dst = append(dst, TermFreq{t, 1})
			return
		}
		i := maphash.String(querySeed, t) % uint64(len(table))
		for ; table[i] != 0; i = (i + 1) % uint64(len(table)) {
			if e := &dst[base+int(table[i])-1]; e.Term == t {
				if e.TF < ^uint32(0) {
					e.TF++
				}
				return
			}
		}
		if len(dst)-base == queryTableTerms {
			seen = make(map[string]int, 4*queryTableTerms)
			for j := base; j < len(dst); j++ {
				seen[dst[j].Term] = j
			}
			seen[t] = len(dst)
			dst = append(dst, TermFreq{t, 1})
			return
		}
		dst = append(dst, TermFreq{t, 1})
		table[i] = int32(len(dst) - base)
	})
	return dst, n
}

// forEachTerm runs the Analyze pipeline and calls emit for every term.
//
// UAX #29 word boundaries depend only on a few characters around them, and
// there is always a boundary between an ASCII whitespace byte and a following
// ASCII byte that is not whitespace, whatever precedes the whitespace: the
// text can be cut there and each piece segmented on its own with the same
// result. forEachTerm cuts the text so that pieces that are pure ASCII go to
// the fast ASCII segmenter (asciiTerms) and the others to uniseg
// (unisegTerms). Both produce the same terms for ASCII text; the tests
// check it (TestASCIIFastPathMatchesUniseg, FuzzASCIIFastPath).
func forEachTerm(text string, emit func(string)) { forEachTermSkip(text, nil, emit) }

// forEachTermSkip is forEachTerm with a shortcut for callers that look for
// a few terms only: a pure-ASCII word of at most MaxTermBytes bytes whose
// lower-cased first byte b has skip[b] set is emitted as "" instead of its
// term, without stemming it. It is exact for such callers because the
// stem of an ASCII word starts with the word's lower-cased first byte, and
// a word of at most MaxTermBytes bytes always yields one term.
func forEachTermSkip(text string, skip *[256]bool, emit func(string)) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	for len(text) > 0 {
		i := indexNonASCII(text)
		if i == len(text) {
			asciiTerms(text, skip, emit)
			return
		}
		p := lastCut(text, i)
		if p > 0 {
			asciiTerms(text[:p], skip, emit)
		}
		q := nextCut(text, i)
		unisegTerms(text[p:q], emit)
		text = text[q:]
	}
}

// unisegTerms is the general pipeline: UAX #29 segmentation by uniseg, CJK
// runes split off, then word.
func unisegTerms(text string, emit func(string)) {
	state := -1
	for len(text) > 0 {
		var seg string
		seg, text, state = uniseg.FirstWordInString(text, state)
		if !hasLetterOrDigit(seg) {
			continue
		}
		// Split CJK runes off into single-rune terms and split at
		// connector punctuation ('_'); the runs between them are
		// ordinary words.
		start := 0
		for i, r := range seg {
			if isConnector(r) {
				word(seg[start:i], emit)
				start = i + utf8.RuneLen(r)
				continue
			}
			if !isCJK(r) {
				continue
			}
			word(seg[start:i], emit)
			n := utf8.RuneLen(r)
			if unicode.ToLower(r) == r {
				// No case to fold: the rune is its own term (word would
				// map it to a copy of itself).
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					emit(seg[i : i+n])
				}
			} else {
				word(strings.ToLower(string(r)), emit)
			}
			start = i + n
		}
		word(seg[start:], emit)
	}
}

// word normalizes and stems one word and emits it if it is a valid term.
func word(w string, emit func(string)) {
	if len(w) == 0 || len(w) > maxWordBytes || !hasLetterOrDigit(w) {
		return
	}
	if indexNonASCII(w) == len(w) {
		asciiWord(w, emit)
		return
	}
	w = strings.Map(normalizeRune, w)
	if isLatinWord(w) {
		w = stems.stem(w)
	}
	if len(w) == 0 || len(w) > MaxTermBytes {
		return
	}
	emit(w)
}

// normalizeRune lower-cases r and maps typographic apostrophes to U+0027.
func normalizeRune(r rune) rune {
	switch r {
	case '\u2018', '\u2019', '\u201B':
		return '\''
	}
	return unicode.ToLower(r)
}

// isConnector reports whether r is connector punctuation (Unicode Pc: '_',
// '‿', '＿'…), which UAX #29 keeps inside words and the analyzer splits at.
func isConnector(r rune) bool {
	return r == '_' || (r >= utf8.RuneSelf && unicode.Is(unicode.Pc, r))
}

// isCJK reports whether r belongs to a script that is indexed rune by rune.
func isCJK(r rune) bool {
	if r < 0x1100 { // fast path: nothing below the Hangul Jamo block is CJK
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// isLatinWord reports whether w has at least one letter and all its letters
// are Latin script, i.e. whether the English stemmer applies to it.
func isLatinWord(w string) bool {
	letters := false
	for _, r := range w {
		if !unicode.IsLetter(r) {
			continue
		}
		if r >= utf8.RuneSelf && !unicode.Is(unicode.Latin, r) {
			return false
		}
		letters = true
	}
	return letters
}

// hasLetterOrDigit reports whether s contains a letter or a digit.
func hasLetterOrDigit(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}
