package swap

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"stemming", "Running runners ran", []string{"run", "runner", "run"}},
		{"hyphen splits", "customer-id", []string{"custom", "id"}},
		{"apostrophe joins", "O'Brien", []string{"o'brien"}},
		{"typographic apostrophe and possessive", "O’Brien's", []string{"o'brien"}},
		{"possessive stripped", "customer's", []string{"custom"}},
		{"contraction kept", "don't", []string{"don't"}},
		{"colon splits", "error: 3706", []string{"error", "3706"}},
		{"question", "what broke?", []string{"what", "break"}},
		{"stop words kept", "the lazy dog", []string{"the", "lazi", "dog"}},
		{"numbers joined by . and ,", "3.14 1,000", []string{"3.14", "1,000"}},
		{"underscore splits", "foo_bar customer_id __x__", []string{"foo", "bar", "custom", "id", "x"}},
		{"connector punctuation splits", "a‿b ｆｏｏ＿ｂａｒ", []string{"a", "b", "ｆｏｏ", "ｂａｒ"}},
		{"han", "数据库错误", []string{"数", "据", "库", "错", "误"}},
		{"hangul", "한국어", []string{"한", "국", "어"}},
		{"katakana and hiragana", "カタ ひら", []string{"カ", "タ", "ひ", "ら"}},
		{"latin glued to han", "abc漢def", []string{"abc", "漢", "def"}},
		{"cyrillic not stemmed", "Москва", []string{"москва"}},
		{"latin diacritics stemmed", "naïve café", []string{"naïv", "café"}},
		{"emoji only", "🔥🔥 👍", nil},
		{"punctuation only", `"*"? -- ...`, nil},
		{"operators are words", "AND OR NOT *", []string{"and", "or", "not"}},
		{"empty", "", nil},
		{"invalid utf-8 breaks words", "ab\xffcd\xc3", []string{"ab", "cd"}},
		{"long token dropped", "ok " + strings.Repeat("x", MaxTermBytes+1) + " fine", []string{"ok", "fine"}},
		{"max-length token kept", strings.Repeat("7", MaxTermBytes), []string{strings.Repeat("7", MaxTermBytes)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Analyze(tc.text)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Analyze(%q) = %q, want %q", tc.text, got, tc.want)
			}
			checkTerms(t, tc.text, got)
		})
	}
}

// TestQueryMatchesDocument checks that the awkward queries of the design
// find a document that contains them verbatim.
func TestQueryMatchesDocument(t *testing.T) {
	for _, q := range []string{"O'Brien", "O’Brien", "customer-id", "error: 3706", "what broke?", "数据库"} {
		doc := "Ticket from " + q + " (see log)."
		tf, _ := TermFreqs(doc)
		terms := QueryTerms(q)
		if len(terms) == 0 {
			t.Fatalf("QueryTerms(%q) is empty", q)
		}
		for _, term := range terms {
			if tf[term] == 0 {
				t.Errorf("query %q: term %q not in document %q (terms %v)", q, term, doc, tf)
			}
		}
	}
}

func TestQueryTermsHostile(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{"customer-id error", []string{"custom", "id", "error"}},
		{"O'Brien", []string{"o'brien"}},
		{"error: 3706", []string{"error", "3706"}},
		{"what broke?", []string{"what", "break"}},
		{`"unbalanced`, []string{"unbalanc"}},
		{`"balanced" quotes`, []string{"balanc", "quot"}},
		{"*", nil},
		{"AND OR NOT", []string{"and", "or", "not"}},
		{"🔥🔥", nil},
		{"数据库", []string{"数", "据", "库"}},
		{"", nil},
		{strings.Repeat(`!"#$%&'()*+,-./:;<=>?@[\]^_{|}~`, 10240/32), nil},
		{"error error ERROR errors", []string{"error"}},
		{"库 数据库", []string{"库", "数", "据"}},
	}
	for _, tc := range tests {
		got := QueryTerms(tc.query)
		if !slices.Equal(got, tc.want) {
			name := tc.query
			if len(name) > 40 {
				name = name[:40] + "…"
			}
			t.Errorf("QueryTerms(%q) = %q, want %q", name, got, tc.want)
		}
		checkTerms(t, tc.query, got)
		checkNoDuplicates(t, tc.query, got)
	}
}

func TestTermFreqs(t *testing.T) {
	tf, n := TermFreqs("Error 3706: errors, errors everywhere. 数据数")
	want := map[string]uint32{"error": 3, "3706": 1, "everywher": 1, "数": 2, "据": 1}
	if n != 8 {
		t.Errorf("length = %d, want 8", n)
	}
	if len(tf) != len(want) {
		t.Errorf("tf = %v, want %v", tf, want)
	}
	for term, c := range want {
		if tf[term] != c {
			t.Errorf("tf[%q] = %d, want %d", term, tf[term], c)
		}
	}
	if tf, n := TermFreqs(""); len(tf) != 0 || n != 0 {
		t.Errorf(`TermFreqs("") = %v, %d`, tf, n)
	}
}

// checkTerms asserts the invariants of every term: non-empty, valid UTF-8,
// at most MaxTermBytes, and the output of Analyze is deterministic and agrees
// with TermFreqs.
func checkTerms(t *testing.T, text string, terms []string) {
	t.Helper()
	for _, term := range terms {
		if term == "" || len(term) > MaxTermBytes || !utf8.ValidString(term) {
			t.Fatalf("input %q: bad term %q", text, term)
		}
	}
	a := Analyze(text)
	if again := Analyze(text); !slices.Equal(a, again) {
		t.Fatalf("input %q: Analyze not deterministic: %q then %q", text, a, again)
	}
	tf, n := TermFreqs(text)
	if int(n) != len(a) {
		t.Fatalf("input %q: TermFreqs length %d, Analyze gives %d terms", text, n, len(a))
	}
	var sum uint32
	for _, c := range tf {
		sum += c
	}
	if sum != n {
		t.Fatalf("input %q: tf sums to %d, length %d", text, sum, n)
	}
}

func checkNoDuplicates(t *testing.T, query string, terms []string) {
	t.Helper()
	seen := make(map[string]bool, len(terms))
	for _, term := range terms {
		if seen[term] {
			t.Fatalf("QueryTerms(%q) repeats %q: %q", query, term, terms)
		}
		seen[term] = true
	}
	// Same set, first-appearance order, as Analyze.
	var want []string
	for _, term := range Analyze(query) {
		if !slices.Contains(want, term) {
			want = append(want, term)
		}
	}
	if !slices.Equal(terms, want) {
		t.Fatalf("QueryTerms(%q) = %q, want Analyze deduplicated %q", query, terms, want)
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkTerms(t, text, Analyze(text))
	})
}

func FuzzQueryTerms(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		terms := QueryTerms(query)
		checkTerms(t, query, terms)
		checkNoDuplicates(t, query, terms)
	})
}

var fuzzSeeds = []string{
	"", "customer-id error", "O'Brien", "O’Brien's", "error: 3706", "what broke?",
	`"unbalanced`, "*", "AND OR NOT", "🔥🔥", "数据库错误", "한국어 カタカナ ひらがな",
	"a\xffb\xc3", "naïve café Москва İstanbul", "'''s", "y'y'y", "3.14,1_000",
	strings.Repeat("a", 200), "\u0301\u200d\ufeff",
}

// message200 is a 200-word chat message of the kind the swap stores.
var message200 = func() string {
	words := strings.Fields("The customer-id lookup failed with error 3706 while O'Brien was running " +
		"the nightly migration; we retried twice, rolled back the schema change and opened " +
		"ticket 42. What broke? The connection pool was exhausted because 数据库 timeouts " +
		"piled up and nobody noticed 🔥 until the dashboards went red.")
	out := make([]string, 200)
	for i := range out {
		out[i] = words[i%len(words)]
	}
	return strings.Join(out, " ")
}()

func BenchmarkAnalyze(b *testing.B) {
	if n := len(strings.Fields(message200)); n != 200 {
		b.Fatalf("message has %d words, want 200", n)
	}
	b.SetBytes(int64(len(message200)))
	b.ReportAllocs()
	for b.Loop() {
		Analyze(message200)
	}
}

// BenchmarkQueryTerms: a 200-word chat message as the query (the context
// assembler searches every scope of a session with the latest user message).
func BenchmarkQueryTerms(b *testing.B) {
	b.SetBytes(int64(len(message200)))
	b.ReportAllocs()
	for b.Loop() {
		QueryTerms(message200)
	}
}

// TestQueryTermsManyDistinct: past the table's 256 distinct terms the
// dedupe moves to a map; repeats on both sides of the move are dropped.
func TestQueryTermsManyDistinct(t *testing.T) {
	var words []string
	for i := range 600 {
		w := "z"
		for n := i; n > 0; n /= 26 {
			w += string(rune('a' + n%26))
		}
		words = append(words, w)
		if i%7 == 0 && i > 0 {
			words = append(words, words[i/2]) // a repeat
		}
	}
	query := strings.Join(words, " ")
	terms := QueryTerms(query)
	if len(terms) <= 256 {
		t.Fatalf("%d distinct terms, want more than the table holds", len(terms))
	}
	checkNoDuplicates(t, query, terms)
}

// TestAppendTermFreqsMatchesTermFreqs: AppendTermFreqs lists exactly the
// terms and frequencies of TermFreqs, each once, in order of first
// appearance (Analyze's order), after what dst held, for documents of a
// few terms and of more distinct terms than its table holds.
func TestAppendTermFreqsMatchesTermFreqs(t *testing.T) {
	var long strings.Builder
	for i := range 3 * queryTableTerms {
		fmt.Fprintf(&long, "word%d term%d word%d ", i, i%7, i)
	}
	docs := []string{"", "Error 3706: errors, errors everywhere. 数据数", "the the the", "O'Brien and customer-id, error: 3706",
		long.String(), strings.Repeat("alpha beta ", 400) + long.String()}
	for _, doc := range docs {
		want, wantN := TermFreqs(doc)
		prefix := []TermFreq{{"kept", 9}}
		got, n := AppendTermFreqs(slices.Clone(prefix), doc)
		if n != wantN {
			t.Errorf("%.20q: length %d, want %d", doc, n, wantN)
		}
		if got[0] != prefix[0] {
			t.Fatalf("%.20q: dst's element became %v", doc, got[0])
		}
		got = got[1:]
		if len(got) != len(want) {
			t.Fatalf("%.20q: %d terms, want %d", doc, len(got), len(want))
		}
		var order []string
		for _, term := range Analyze(doc) {
			if !slices.Contains(order, term) {
				order = append(order, term)
			}
		}
		for i, e := range got {
			if want[e.Term] != e.TF || order[i] != e.Term {
				t.Fatalf("%.20q: term %d = %v, want %q tf %d", doc, i, e, order[i], want[order[i]])
			}
		}
	}
}
