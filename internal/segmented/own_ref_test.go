package segmented

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// ownRefSession appends a long planted message (longer than
// maxRecalledItemTokens: its recalled text is trimmed) and a short one,
// then filler until both left L1, and returns the session and the two.
func ownRefSession(t *testing.T) (*State, *memoryv1.Message, *memoryv1.Message) {
	t.Helper()
	s := mustCreate(t, &memoryv1.CreateSessionRequest{MaxContextTokens: 6500, ReservedOutputTokens: 500})
	var long strings.Builder
	for i := range 100 {
		fmt.Fprintf(&long, "Step %d of the migration runbook: drain node kestrel-%d, snapshot volume v%d, verify checksums. ", i, i, i*7)
	}
	evs := appendOK(t, s, user("Remember this: the staging database password rotates on the 14th, owner is Priya Raman."),
		assistant(long.String()))
	msgs := evs[1].(*memoryv1.MessagesAppended).Messages
	short, longMsg := msgs[0], msgs[1]
	for i := 0; strings.Contains(layerText(s, LayerL1), "Priya Raman") || strings.Contains(layerText(s, LayerL1), "kestrel-99"); i++ {
		if i == 400 {
			t.Fatal("setup: the planted messages are still verbatim in L1")
		}
		appendOK(t, s, user(fmt.Sprintf("Filler question %d about the weather and lunch plans for the team outing?", i)),
			assistant(fmt.Sprintf("Filler answer %d: sunny, sandwiches, and a walk by the river after the standup meeting.", i)))
	}
	return s, short, longMsg
}

// storedText is the text the recalled item of the session's own message m
// held before own messages were references: recalledText fitted to
// maxRecalledItemTokens.
func storedText(t *testing.T, m *memoryv1.Message) (string, uint32) {
	t.Helper()
	text, tokens, ok := fitItem(tokenizerT(t), recalledText(m), maxRecalledItemTokens)
	if !ok {
		t.Fatalf("%s does not fit an item", m.GetId())
	}
	return text, tokens
}

// TestOwnRecalledByReference: the session's own recalled messages are
// recorded as references (no text in the event), and the context read
// through Hydrate shows byte for byte the text they were stored with
// before (the header, the trimming); a message gone leaves the context
// with its tokens.
func TestOwnRecalledByReference(t *testing.T) {
	s, short, long := ownRefSession(t)
	src := map[uint64]*memoryv1.Message{short.GetSeq(): short, long.GetSeq(): long}
	c := &Candidates{Recall: []*memoryv1.Message{short, long}}
	evs := appendWith(t, s, c, user("Who owns the staging database password, and what was step 12 of the runbook?"))
	ev := assembledEvent(evs)
	if ev == nil || len(ev.GetSections().GetRecalled()) != 2 {
		t.Fatalf("recalled section: %v", ev)
	}
	b := marshal(t, ev)
	for _, r := range ev.GetSections().GetRecalled() {
		m := src[r.GetSeq()]
		text, tokens := storedText(t, m)
		if r.GetText() != "" || r.GetSessionId() != "" || r.GetMessageId() != m.GetId() || r.GetTokens() != tokens {
			t.Errorf("item %s: %d bytes of text, session %q, id %q, %d tokens; want a reference of %d tokens", m.GetId(), len(r.GetText()), r.GetSessionId(), r.GetMessageId(), r.GetTokens(), tokens)
		}
		if r.GetTrimmed() != strings.HasSuffix(text, "…") {
			t.Errorf("item %s: trimmed %v, its text ends %q", m.GetId(), r.GetTrimmed(), text[max(0, len(text)-20):])
		}
	}
	for _, words := range []string{"Priya Raman", "kestrel-3", "Recalled "} {
		if bytes.Contains(b, []byte(words)) {
			t.Errorf("the ContextAssembled event holds %q", words)
		}
	}
	// The same event with the texts stored (as events were written
	// before): the context it gives, unhydrated, is the hydrated one.
	old := proto.Clone(ev).(*memoryv1.ContextAssembled)
	for _, r := range old.GetSections().GetRecalled() {
		r.Text, _ = storedText(t, src[r.GetSeq()])
		r.TextBytes, r.Trimmed = 0, false
	}
	if n, o := len(b), len(marshal(t, old)); n*4 > o {
		t.Errorf("the event is %d bytes, %d with the texts: want at most a quarter", n, o)
	}
	byMsg := Sources{Message: func(sid string, seq uint64) (*memoryv1.Message, bool) {
		m, ok := src[seq]
		return m, ok && sid == s.snap.GetSessionId()
	}}
	live := Hydrate(s.Context(), byMsg)
	replica := FromSnapshot(s.Snapshot())
	if err := replica.Apply(Meta{Version: s.Version() + 1, Seq: s.LastSeq() + 1}, roundTrip(t, []proto.Message{old})); err != nil {
		t.Fatal(err)
	}
	stored := replica.Context()
	if !proto.Equal(stored.GetLayers(), live.GetLayers()) || !proto.Equal(stored.GetUsage(), live.GetUsage()) || len(stored.GetMessages()) != len(live.GetMessages()) {
		t.Fatalf("stored texts: %v %v, %d messages; references: %v %v, %d messages", stored.GetLayers(), stored.GetUsage(), len(stored.GetMessages()),
			live.GetLayers(), live.GetUsage(), len(live.GetMessages()))
	}
	shown := 0
	for i, m := range stored.GetMessages() {
		if !proto.Equal(m, live.GetMessages()[i]) {
			t.Errorf("message %d: stored %v, referenced %v", i, m, live.GetMessages()[i])
		}
		if m.GetLayer() == LayerRecalled {
			shown++
		}
	}
	if shown != 2 {
		t.Fatalf("%d recalled messages shown, want 2", shown)
	}
	// An event with the texts stays as it is, whatever the sources, live
	// or in time travel.
	if got := Hydrate(stored, Sources{}); !proto.Equal(got, stored) {
		t.Fatal("hydrating a context whose recalled texts are stored changed it")
	}
	if got := HydrateAt(stored, nil, nil); !proto.Equal(got, stored) {
		t.Fatal("time travel to a context whose recalled texts are stored changed it")
	}
	// Time travel reads the references back as the live read does.
	past := HydrateAt(s.Context(), nil, func(sid string, seq uint64) (*memoryv1.Message, PastEntry) {
		if m, ok := src[seq]; ok && sid == s.snap.GetSessionId() {
			return m, PastText
		}
		return nil, PastNotKept
	})
	if !proto.Equal(past, live) {
		t.Fatal("time travel shows another context than the live read")
	}
	// A message gone: its item and its tokens leave the context.
	gone := Hydrate(s.Context(), Sources{Message: func(sid string, seq uint64) (*memoryv1.Message, bool) {
		m, ok := src[seq]
		return m, ok && seq != long.GetSeq()
	}})
	var longTokens uint32
	for _, r := range ev.GetSections().GetRecalled() {
		if r.GetSeq() == long.GetSeq() {
			longTokens = r.GetTokens()
		}
	}
	if got, want := gone.GetUsage().GetUsed(), live.GetUsage().GetUsed()-longTokens; got != want || len(gone.GetMessages()) != len(live.GetMessages())-1 {
		t.Fatalf("without message %s: %d tokens used, %d messages; want %d, %d", long.GetId(), got, len(gone.GetMessages()), want, len(live.GetMessages())-1)
	}
}
