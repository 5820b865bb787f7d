package consolidate

import (
	"strings"
	"testing"
	"time"
)

// TestSessionDigest: the digest quotes what the user did, with the
// sitting's date and each relative date resolved; small talk, compliments,
// the other speaker's words and the sentences a fact quotes already stay
// out.
func TestSessionDigest(t *testing.T) {
	msgs := []Message{
		{ID: "m1", Seq: 1, User: true, Said: said08May, Text: "Hey Sam! Good to see you!"},
		{ID: "m2", Seq: 2, Said: said08May, Text: "Hey! I went skydiving on Saturday, it was wild."},
		{ID: "m3", Seq: 3, User: true, Said: said08May, Text: "Wow Sam, that sounds amazing! I love how brave you are."},
		{ID: "m4", Seq: 4, Said: said08May, Text: "Thanks! What about you?"},
		{ID: "m5", Seq: 5, User: true, Said: said08May, Text: "I signed up for a pottery class yesterday. The first lesson is next Tuesday and I can't wait."},
		{ID: "m6", Seq: 6, Said: said08May, Text: "So cool!"},
		{ID: "m7", Seq: 7, User: true, Said: said08May, Text: "Thanks, talk soon! My sister drove up from Leeds to see us on Saturday."},
	}
	d, ok := SessionDigest(msgs, Extract(msgs, nil))
	if !ok {
		t.Fatal("no digest")
	}
	want := `On 2023-05-08 the user said: "The first lesson is next Tuesday [2023-05-09] and I can't wait." "My sister drove up from Leeds to see us on Saturday [2023-05-06]."`
	if d.Text != want {
		t.Fatalf("got  %s\nwant %s", d.Text, want)
	}
	if strings.Join(d.MessageIDs, ",") != "m5,m7" || d.First != said08May || d.Last != said08May {
		t.Fatalf("digest %+v", d)
	}
	// Nothing worth keeping: no digest.
	if _, ok := SessionDigest([]Message{{ID: "x", User: true, Text: "Thanks, you too! Talk soon!"}}, nil); ok {
		t.Fatal("a digest of small talk")
	}
	// A session over two days says so.
	later := time.Date(2023, 5, 9, 8, 0, 0, 0, time.UTC).UnixNano()
	d, _ = SessionDigest([]Message{msgs[4], {ID: "m8", Seq: 8, User: true, Said: later, Text: "The kiln at the studio cracked my first bowl today!"}}, nil)
	if !strings.HasPrefix(d.Text, "From 2023-05-08 to 2023-05-09 the user said:") {
		t.Fatalf("two days: %s", d.Text)
	}
}
