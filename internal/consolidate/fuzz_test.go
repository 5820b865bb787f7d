package consolidate

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/agentmem/internal/sharedmem"
)

// FuzzExtract: any text extracts without a panic, and every fact has a
// valid entry key, a value and a source.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		"I moved to Porto last month.", "My daughter's name is Ana.", "Actually, make it Monday.",
		"I'm allergic to peanuts, shellfish and kiwi.", "my email is a@b.c, ok", "The mentor is a guy called Bo.",
		"Checked the receipt for the desk: it was $450, not $420.", "I'm 34.", "from now on, be brief",
		"my ÄÖÜ is Ünïcödé", "I have a 😀 allergy", "", "....", "I tried x, but it failed",
	} {
		f.Add(s, "We decided to ship on Friday.")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		known := []Fact{{Subject: "user", Attribute: "home_city", Value: "Lisbon", Type: Semantic}}
		fs := Extract([]Message{
			{ID: "m1", Seq: 1, User: true, Text: b},
			{ID: "m2", Seq: 2, Text: "Who's teaching it?"},
			{ID: "m3", Seq: 3, User: true, Text: a},
		}, known)
		for _, f := range fs {
			if err := sharedmem.ValidateKey(f.Key()); err != nil {
				t.Fatalf("%q/%q: key %q: %v", a, b, f.Key(), err)
			}
			if strings.TrimSpace(f.Value) == "" || len(f.MessageIDs) == 0 || f.Confidence <= 0 || f.Confidence > 1 {
				t.Fatalf("%q/%q: fact %+v", a, b, f)
			}
		}
	})
}
