package swap

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
	"pgregory.net/rapid"
)

// referenceTerms is the analyzer before the fast paths: uniseg on the whole
// text, strings.Map, stemWord without cache. Analyze must agree with it
// on every input.
func referenceTerms(text string) []string {
	var terms []string
	emit := func(t string) { terms = append(terms, t) }
	refWord := func(w string) {
		if len(w) == 0 || len(w) > maxWordBytes || !hasLetterOrDigit(w) {
			return
		}
		w = strings.Map(normalizeRune, w)
		if isLatinWord(w) {
			w = stemWord(w)
		}
		if len(w) == 0 || len(w) > MaxTermBytes {
			return
		}
		emit(w)
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	state := -1
	for len(text) > 0 {
		var seg string
		seg, text, state = uniseg.FirstWordInString(text, state)
		if !hasLetterOrDigit(seg) {
			continue
		}
		start := 0
		for i, r := range seg {
			if unicode.Is(unicode.Pc, r) {
				refWord(seg[start:i])
				start = i + utf8.RuneLen(r)
				continue
			}
			if !isCJK(r) {
				continue
			}
			refWord(seg[start:i])
			refWord(strings.ToLower(string(r)))
			start = i + utf8.RuneLen(r)
		}
		refWord(seg[start:])
	}
	return terms
}

// failer is the part of testing.TB that *rapid.T also has.
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

func collect(f func(string, func(string)), text string) []string {
	var terms []string
	f(text, func(t string) { terms = append(terms, t) })
	return terms
}

// checkASCIIFastPath compares, term by term, the ASCII fast path with the
// uniseg path and with the reference analyzer on an ASCII text.
func checkASCIIFastPath(t failer, text string) {
	t.Helper()
	fast := collect(func(s string, emit func(string)) { asciiTerms(s, nil, emit) }, text)
	slow := collect(unisegTerms, text)
	ref := referenceTerms(text)
	if !slices.Equal(fast, slow) || !slices.Equal(fast, ref) {
		t.Fatalf("input %q:\nascii  %q\nuniseg %q\nref    %q", text, fast, slow, ref)
	}
	if got := Analyze(text); !slices.Equal(got, ref) {
		t.Fatalf("input %q: Analyze %q, reference %q", text, got, ref)
	}
}

func checkMatchesReference(t failer, text string) {
	t.Helper()
	want := referenceTerms(text)
	if got := Analyze(text); !slices.Equal(got, want) {
		t.Fatalf("input %q:\nAnalyze   %q\nreference %q", text, got, want)
	}
}

// asciiAlphabet is weighted towards the characters that have a
// Word_Break property of their own.
var asciiAlphabet = []rune("aAbBeEsSyYzZ019_:.,;'\"  \t\n\r\v\f-!?*#/@()`~")

var asciiText = rapid.OneOf(
	rapid.StringOf(rapid.SampledFrom(asciiAlphabet)),
	rapid.StringOf(rapid.RuneFrom(nil, &unicode.RangeTable{R16: []unicode.Range16{{Lo: 0, Hi: 0x7f, Stride: 1}}})),
	rapid.Custom(func(t *rapid.T) string { // words from message200 glued by punctuation
		words := rapid.SliceOf(rapid.SampledFrom(strings.Fields(asciiOnly(message200)))).Draw(t, "words")
		seps := rapid.SliceOfN(rapid.SampledFrom([]string{" ", "", "'", ".", ",", ";", ":", "-", "_", "1", "\n", `"`, "'s "}), len(words), len(words)).Draw(t, "seps")
		var b strings.Builder
		for i, w := range words {
			b.WriteString(w)
			b.WriteString(seps[i])
		}
		return b.String()
	}),
)

func asciiOnly(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= utf8.RuneSelf {
			return -1
		}
		return r
	}, s)
}

func TestASCIIFastPathMatchesUniseg(t *testing.T) {
	for _, s := range append(fuzzSeeds, asciiOnly(message200),
		"a:b a.b a'b 1.2 1,2 1;2 1'2 1:2 a,b a;b a.1 1.a a_.b a._b _1.2 a1.2 1a.b",
		"a..b 1..2 a''b .a. 'a' a. .a 'a 1. .1 ,1, a:b:c 1,2.3;4'5 x'", "'''s", "don't's o'brien's",
		"a\"b A:B:C Y'Y'Y", "\r\n\v\fa\tb", "__ _ _a a_ a__b", strings.Repeat("ab", 100), strings.Repeat("ab'", 50),
	) {
		if indexNonASCII(s) == len(s) {
			checkASCIIFastPath(t, s)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		checkASCIIFastPath(t, asciiText.Draw(t, "text"))
	})
}

// FuzzASCIIFastPath compares the ASCII fast path with the uniseg path. The
// fuzzer's bytes are folded to ASCII.
func FuzzASCIIFastPath(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add("a:b 1,2;3 a.1 x'y'z 3.14 1,000 foo_bar customer-id O'Brien's")
	f.Fuzz(func(t *testing.T, text string) {
		b := []byte(text)
		for i := range b {
			b[i] &= 0x7f
		}
		checkASCIIFastPath(t, string(b))
	})
}

// mixedAlphabet adds to the ASCII one characters that exercise the cuts
// between the ASCII and uniseg paths: combining marks, ZWJ, format
// characters, non-ASCII spaces, CJK, emoji, regional indicators, Hebrew,
// Katakana, typographic apostrophes, invalid bytes.
var mixedAlphabet = append(slices.Clone(asciiAlphabet), []rune(
	"é数据カひ한Жλ🔥👍🇫🇷\u0301\u200d\u200b\u00ad\ufeff\u00a0\u202f\u3000\u2028\u0085\u1680’‘‛״א׳·٫ＡＺ０\uFF9E\u3007\u30FC\U0001F3FB")...)

var mixedText = rapid.OneOf(
	rapid.StringOf(rapid.SampledFrom(mixedAlphabet)),
	rapid.StringOf(rapid.Rune()),
	rapid.Custom(func(t *rapid.T) string {
		s := rapid.StringOf(rapid.SampledFrom(mixedAlphabet)).Draw(t, "s")
		if len(s) > 0 { // an invalid byte somewhere
			i := rapid.IntRange(0, len(s)-1).Draw(t, "i")
			s = s[:i] + "\xff" + s[i:]
		}
		return s
	}),
)

func TestAnalyzeMatchesReference(t *testing.T) {
	for _, s := range append(fuzzSeeds, message200, "a \u0301b", "a\t\u0301b", "1 \u200d2", "a\u202fb c", "é a:b ö", "x 🇫🇷🇫 y",
		"abc漢def 漢 a", "\u3007 〇 ㋐ ⺀", "a’b c’d", "\u2028a\u2028") {
		checkMatchesReference(t, s)
	}
	rapid.Check(t, func(t *rapid.T) {
		checkMatchesReference(t, mixedText.Draw(t, "text"))
	})
}

func FuzzAnalyzeMatchesReference(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add("a \u0301b x\u202fy 🇫🇷🇫 abc漢def 〇")
	f.Fuzz(func(t *testing.T, text string) {
		checkMatchesReference(t, text)
	})
}

// TestStemCacheConcurrent runs Analyze from several goroutines on a
// vocabulary large enough to rotate the cache generations (run with -race).
func TestStemCacheConcurrent(t *testing.T) {
	var words []string
	for i := range 40000 {
		words = append(words, fmt.Sprintf("Word%cing%d", 'a'+i%26, i))
	}
	text := strings.Join(words, " ")
	want := referenceTerms(text)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2 {
				if got := Analyze(text); !slices.Equal(got, want) {
					t.Error("concurrent Analyze differs from the reference")
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range stems.shards {
		sh := &stems.shards[i]
		sh.mu.RLock()
		if sh.curBytes > stemGenBytes {
			t.Errorf("shard %d: %d bytes, bound %d", i, sh.curBytes, stemGenBytes)
		}
		maxEntries := stemGenBytes / stemEntryOverhead
		if len(sh.cur) > maxEntries || len(sh.old) > maxEntries {
			t.Errorf("shard %d: %d + %d entries, bound %d each", i, len(sh.cur), len(sh.old), maxEntries)
		}
		sh.mu.RUnlock()
	}
}

func TestStemCache(t *testing.T) {
	c := newStemCache()
	for _, w := range []string{"running", "customer's", "the", "a", "naïve", strings.Repeat("x", stemMaxKeyBytes+1)} {
		want := stemWord(w)
		for range 3 {
			if got := c.stem(w); got != want {
				t.Fatalf("stem(%q) = %q, want %q", w, got, want)
			}
			if got := c.stemBytes([]byte(w)); got != want {
				t.Fatalf("stemBytes(%q) = %q, want %q", w, got, want)
			}
		}
	}
}

// TestDigitEndedWordsAreTheirOwnStems checks the shortcut of asciiWordClass:
// an ASCII word that ends in a digit is its own stem. Words are drawn from
// letters and fragments that the stemmer's rules look at (suffixes, y,
// apostrophes, special and stop words) followed by digits.
func TestDigitEndedWordsAreTheirOwnStems(t *testing.T) {
	parts := []string{"ing", "ed", "ly", "ies", "sses", "ational", "ization", "y", "Y", "'", "'s", "e", "l",
		"news", "skies", "the", "a", "is", "gener", "commun", "arsen", "x", "at", "bl", "iz", "eed", "ness"}
	rapid.Check(t, func(t *rapid.T) {
		w := strings.Join(rapid.SliceOfN(rapid.SampledFrom(parts), 0, 4).Draw(t, "parts"), "") +
			rapid.StringMatching(`[0-9]{1,4}`).Draw(t, "digits")
		if w[0] == '\'' {
			w = "o" + w
		}
		lw := strings.ToLower(w)
		if got := stemWord(lw); got != lw {
			t.Fatalf("stem(%q) = %q, the shortcut says %q", lw, got, lw)
		}
		if got, want := Analyze(w), referenceTerms(w); !slices.Equal(got, want) {
			t.Fatalf("Analyze(%q) = %q, reference %q", w, got, want)
		}
	})
}
