package segmented

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// codecT is the library codec itself, the reference of the fast path.
func codecT(t testing.TB) tokenizer.Codec {
	t.Helper()
	return tokenizerT(t).(*cl100k).codec
}

// checkFastPath compares the fast path with the codec on text: the pieces
// splitPlain cuts, each encoded alone, give the codec's tokens of the
// whole text, and Count gives the codec's count.
func checkFastPath(t *testing.T, codec tokenizer.Codec, tok Tokenizer, text string) {
	t.Helper()
	want, err := codec.Count(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Count(text); got != want {
		t.Fatalf("Count(%q) = %d, codec %d", text, got, want)
	}
	if !plainText(text) {
		return
	}
	_, wantTokens, _ := codec.Encode(text)
	var got []string
	var pieces []string
	splitPlain(text, func(p string) {
		pieces = append(pieces, p)
		_, toks, _ := codec.Encode(p)
		got = append(got, toks...)
	})
	if strings.Join(pieces, "") != text {
		t.Fatalf("pieces %q do not make up %q", pieces, text)
	}
	if !slices.Equal(got, wantTokens) {
		t.Fatalf("text %q: pieces %q give tokens %q, codec %q", text, pieces, got, wantTokens)
	}
}

// TestCountFastPathMatchesCodec: random texts over an alphabet that hits
// every alternative of the pattern (contractions in both cases, runs of
// spaces, tabs and newlines before letters, digits and punctuation, digit
// runs, punctuation runs with newlines), plus non-plain texts (the codec's
// path). Seeded: a failure names its text.
func TestCountFastPathMatchesCodec(t *testing.T) {
	codec, tok := codecT(t), tokenizerT(t)
	atoms := []string{
		"a", "Z", "hello", "World", "the", "it", "don", "I",
		"'", "'s", "'S", "'t", "'re", "'RE", "'ve", "'m", "'ll", "'Ll", "'d", "'x", "'r", "'l", "'v",
		"0", "12", "345", "67890",
		" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n ", "\r",
		".", ",", "!", "?", "(", ")", "\"", "-", "_", "/", "#", "@", "{", "}", "...", "!!", "~",
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var sb strings.Builder
		for range r.IntN(24) {
			sb.WriteString(atoms[r.IntN(len(atoms))])
		}
		checkFastPath(t, codec, tok, sb.String())
	}
	for _, text := range []string{
		"", "hello world", "Hello, world!", "  leading and trailing  ", "tab\tseparated\tvalues\n",
		"def f(x):\n    return x**2\n\n\n", `{"id": 42, "name": "O'Brien's"}`, "1234567 + 89 = 1234656",
		"naïve café", "数据库", "a\x00b", "a\vb\fc", "\x7f", strings.Repeat("word ", 300),
	} {
		checkFastPath(t, codec, tok, text)
	}
}

func FuzzCount(f *testing.F) {
	for _, s := range []string{"hello world", "it's  (x)\n\n y", "   \t\n", "'Ll 123456 !!\r\n"} {
		f.Add(s)
	}
	codec, tok := codecT(f), tokenizerT(f)
	f.Fuzz(func(t *testing.T, text string) {
		checkFastPath(t, codec, tok, text)
	})
}

// BenchmarkCount: the fast path (pieces counted once, then looked up)
// beside the codec alone, on chat text.
func BenchmarkCount(b *testing.B) {
	text := strings.Repeat("The customer-id lookup failed with error 3706 while O'Brien was running the nightly export; "+
		"we retried twice and it's still failing.\n", 4)
	codec, tok := codecT(b), tokenizerT(b)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			tok.Count(text)
		}
	})
	// Every piece new (ids, hashes): the fast path's worst case, each
	// piece counted by the codec alone.
	r := rand.New(rand.NewPCG(3, 4))
	unique := func() string {
		var sb strings.Builder
		for sb.Len() < len(text) {
			sb.WriteString(" x")
			for range 8 {
				sb.WriteByte(byte('a' + r.IntN(26)))
			}
		}
		return sb.String()
	}
	b.Run("fast-unique-pieces", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			tok.Count(unique())
		}
	})
	b.Run("codec-unique-pieces", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, err := codec.Count(unique()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("codec", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := codec.Count(text); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCountKeepsPieces: new pieces are counted alone and kept until many
// are kept; then a text mostly of unseen pieces is counted by the codec
// whole, keeping nothing. Counts equal the codec's either way.
func TestCountKeepsPieces(t *testing.T) {
	codec := codecT(t)
	tok := &cl100k{codec: codec}
	words := func(prefix string, n int) string {
		var sb strings.Builder
		for i := range n { // " prefix" and i in letters: one piece each
			sb.WriteString(" " + prefix)
			for ; i > 0; i /= 26 {
				sb.WriteByte(byte('a' + i%26))
			}
		}
		return sb.String()
	}
	check := func(text string) {
		t.Helper()
		if want, _ := codec.Count(text); tok.Count(text) != want {
			t.Fatalf("Count = %d, codec %d", tok.Count(text), want)
		}
	}
	check(words("warm", warmPieces))
	if len(tok.pieces.m) < warmPieces {
		t.Fatalf("a cold cache kept %d pieces, want every new one", len(tok.pieces.m))
	}
	kept := len(tok.pieces.m)
	check(words("novel", 2*missesAlone))
	if len(tok.pieces.m) != kept {
		t.Fatalf("a text of unseen pieces on a warm cache kept %d more", len(tok.pieces.m)-kept)
	}
	check(words("few", missesAlone/2))
	if len(tok.pieces.m) == kept {
		t.Fatal("a few new pieces were not kept")
	}
}
