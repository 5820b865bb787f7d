package swap

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The ASCII fast path: UAX #29 word segmentation specialised to ASCII text.
//
// In ASCII, the Word_Break properties of UAX #29 (Unicode 15, as implemented
// by uniseg) are: letters are ALetter, digits Numeric, '_' ExtendNumLet,
// ':' MidLetter, '.' MidNumLet, ',' and ';' MidNum, '\'' Single_Quote, '"'
// Double_Quote, ' ' WSegSpace, CR, LF and VT/FF (Newline); everything else is
// Other. No ASCII character is Extend, Format, ZWJ, Katakana, Hebrew_Letter,
// Regional_Indicator or Extended_Pictographic, so the rules that apply are:
//
//   - letters, digits and '_' never break between them (WB5, WB8-10, WB13a-b);
//   - a letter, then ':', '.' or '\'', then a letter: no break (WB6-7);
//   - a digit, then ',', ';', '.' or '\'', then a digit: no break (WB11-12);
//   - every other position is a boundary, and segments without a letter or
//     digit are not words.
//
// The analyzer then splits segments at '_' (connector punctuation: see
// unisegTerms), and no rule joins across a '_' what it would not join
// without it, so here '_' is simply not a word character.
//
// So a word is a maximal run of [A-Za-z0-9] that may go on across one of
// those middle characters when it sits between two letters or two digits.

// Byte classes of the ASCII segmenter.
const (
	cOther  = 0
	cLetter = 1 << iota // A-Z a-z
	cUpper              // A-Z
	cDigit              // 0-9
	cMidL               // joins two letters: : . '
	cMidN               // joins two digits: , ; . '
	cSpace              // ASCII whitespace: \t \n \v \f \r and space

	cWord = cLetter | cDigit
)

var asciiClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = cLetter
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = cLetter | cUpper
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = cDigit
	}
	t[':'] = cMidL
	t['.'] = cMidL | cMidN
	t['\''] = cMidL | cMidN
	t[','] = cMidN
	t[';'] = cMidN
	for _, c := range "\t\n\v\f\r " {
		t[c] = cSpace
	}
	return t
}()

// indexNonASCII returns the index of the first byte of s that is not ASCII,
// or len(s).
func indexNonASCII(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if (uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56)&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return i
		}
	}
	return i
}

// isCut reports whether the text may be cut before s[p] (0 < p < len(s)):
// s[p-1] is ASCII whitespace and s[p] starts a character that is never
// Extend, Format, ZWJ or WSegSpace: an ASCII byte that is not whitespace, or
// a rune of category L (but Lm), N, P, Sm, Sc or So. There is a word boundary
// there and no UAX #29 rule looks across it: whitespace is never part of a
// MidLetter/MidNum sequence (WB6-7, WB11-12) nor a Regional_Indicator
// (WB15-16), the next character does not attach to it (WB3d, WB4), and
// uniseg starts a text in the same state as it would continue after
// whitespace.
func isCut(s string, p int) bool {
	if asciiClass[s[p-1]]&cSpace == 0 {
		return false
	}
	if c := s[p]; c < utf8.RuneSelf {
		return asciiClass[c]&cSpace == 0
	}
	r, _ := utf8.DecodeRuneInString(s[p:])
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lo,
		unicode.N, unicode.P, unicode.Sm, unicode.Sc, unicode.So)
}

// lastCut returns the last cut position p <= i of s, or 0.
func lastCut(s string, i int) int {
	for p := min(i, len(s)-1); p > 0; p-- {
		if isCut(s, p) {
			return p
		}
	}
	return 0
}

// nextCut returns the first cut position p > i of s, or len(s).
func nextCut(s string, i int) int {
	for p := i + 1; p < len(s); p++ {
		if isCut(s, p) {
			return p
		}
	}
	return len(s)
}

// asciiTerms is the Analyze pipeline for pure-ASCII text: it emits the same
// terms as unisegTerms(s, emit) would.
func asciiTerms(s string, skip *[256]bool, emit func(string)) {
	n := len(s)
	for i := 0; i < n; {
		cl := asciiClass[s[i]]
		if cl&cWord == 0 {
			i++
			continue
		}
		start := i
		var seen uint8 // union of the classes in the word
		for {
			seen |= cl
			i++
			if i >= n {
				break
			}
			next := asciiClass[s[i]]
			if next&cWord != 0 {
				cl = next
				continue
			}
			// A middle character joins two letters or two digits.
			if i+1 < n {
				after := asciiClass[s[i+1]]
				if (cl&after&cLetter != 0 && next&cMidL != 0) ||
					(cl&after&cDigit != 0 && next&cMidN != 0) {
					i++
					cl = after
					continue
				}
			}
			break
		}
		if seen&(cLetter|cDigit) != 0 {
			if skip != nil && i-start <= MaxTermBytes {
				c := s[start]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				if skip[c] {
					emit("")
					continue
				}
			}
			asciiWordClass(s[start:i], seen, emit)
		}
	}
}

// asciiWord is word for an ASCII w of at most maxWordBytes bytes that has a
// letter or a digit.
func asciiWord(w string, emit func(string)) {
	var seen uint8
	for i := 0; i < len(w); i++ {
		seen |= asciiClass[w[i]]
	}
	asciiWordClass(w, seen, emit)
}

// asciiWordClass is asciiWord with seen, the union of the byte classes of w,
// already known.
func asciiWordClass(w string, seen uint8, emit func(string)) {
	if len(w) > maxWordBytes {
		return
	}
	if seen&cLetter == 0 {
		// Digits and '_' only: no case, not stemmed.
		if len(w) <= MaxTermBytes {
			emit(w)
		}
		return
	}
	if endsInDigit(w) {
		// The English stemmer only rewrites letter suffixes, special words
		// and stop words (all letters) and a leading apostrophe: a word that
		// ends in a digit ("v2", "ticket1234") is its own stem
		// (TestDigitEndedWordsAreTheirOwnStems). Skipping the stemmer and
		// the cache keeps identifiers, which rarely repeat, from churning it.
		if len(w) <= MaxTermBytes {
			if seen&cUpper != 0 {
				w = strings.ToLower(w)
			}
			emit(w)
		}
		return
	}
	var t string
	if seen&cUpper != 0 {
		var buf [maxWordBytes]byte
		b := buf[:len(w)]
		for i := 0; i < len(w); i++ {
			c := w[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		t = stems.stemBytes(b)
	} else {
		t = stems.stem(w)
	}
	if len(t) == 0 || len(t) > MaxTermBytes {
		return
	}
	emit(t)
}

// endsInDigit reports whether the ASCII word w ends in a digit and does not
// start with an apostrophe (the stemmer would trim it).
func endsInDigit(w string) bool {
	c := w[len(w)-1]
	return '0' <= c && c <= '9' && w[0] != '\''
}
