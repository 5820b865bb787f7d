package actors

import (
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zeebo/blake3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestCommandDigest: the digest ignores command_id, tells payloads apart,
// counts large data by its bytes (not the reference id a retry's offload
// assigns anew), and is nil for bodies that carry no command.
func TestCommandDigest(t *testing.T) {
	a := &memoryv1.AppendRequest{CommandId: "c1", Messages: []*memoryv1.MessageInput{userMsg("hello")}}
	b := &memoryv1.AppendRequest{CommandId: "c2", Messages: []*memoryv1.MessageInput{userMsg("hello")}}
	c := &memoryv1.AppendRequest{CommandId: "c1", Messages: []*memoryv1.MessageInput{userMsg("hello!")}}
	if da, db := CommandDigest(a), CommandDigest(b); len(da) != DigestSize || !slices.Equal(da, db) {
		t.Fatalf("same payload, other command ids: %x vs %x", da, db)
	}
	if slices.Equal(CommandDigest(a), CommandDigest(c)) {
		t.Fatal("different payloads share a digest")
	}
	if a.GetCommandId() != "c1" {
		t.Fatal("CommandDigest changed its argument")
	}
	ref := func(id string, stored int64, sha string) *memoryv1.AppendRequest {
		return &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{
			Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "t1", Content: "[stored as " + id + "]",
			DataRef: &memoryv1.DataReference{Id: id, Sha256: sha, Size: 9000, StoredUnixNano: stored}}}}
	}
	if !slices.Equal(CommandDigest(ref("d1", 1, "ab")), CommandDigest(ref("d2", 2, "ab"))) {
		t.Fatal("the same large data offloaded twice gives two digests")
	}
	if slices.Equal(CommandDigest(ref("d1", 1, "ab")), CommandDigest(ref("d1", 1, "cd"))) {
		t.Fatal("different large data share a digest")
	}
	for _, body := range []any{&memoryv1.ContextRequest{}, &memoryv1.GetSessionRequest{}, "not a message", nil} {
		if d := CommandDigest(body); d != nil {
			t.Fatalf("%T carries no command, digest %x", body, d)
		}
	}
	p1 := CommandDigest(&Promote{Request: &memoryv1.PromoteRequest{CommandId: "p", MessageIds: []string{"m1"}, MinSeq: 4}})
	p2 := CommandDigest(&Promote{Request: &memoryv1.PromoteRequest{CommandId: "p", MessageIds: []string{"m1"}, MinSeq: 9}})
	if len(p1) != DigestSize || !slices.Equal(p1, p2) {
		t.Fatalf("promote digests %x %x: min_seq must not count", p1, p2)
	}
}

// TestRetryTellsTheTruth: a retried append answers duplicate with the
// original reply in full (ids, tokens, sequence, version), from the model's
// window and, after a restart of the directory, from its snapshot; the same
// command id with another payload is a 409 naming command_id, and stores
// nothing.
func TestRetryTellsTheTruth(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	h.must(t, "r", &memoryv1.CreateSessionRequest{UserId: "u"})
	x := &memoryv1.AppendRequest{CommandId: "x", Messages: []*memoryv1.MessageInput{
		{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "call_1", Name: "sql", Arguments: `{"q":1}`}}},
		{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call_1", Content: "one row"},
		{Id: "mine", Role: memoryv1.Role_ROLE_USER, Content: "thanks"},
	}}
	first := h.must(t, "r", x).(*memoryv1.AppendReply)
	if len(first.GetMessageIds()) != 3 || first.GetResult().GetDuplicate() {
		t.Fatalf("first append %v", first)
	}
	check := func(h *harness, when string) {
		t.Helper()
		got := h.must(t, "r", proto.Clone(x)).(*memoryv1.AppendReply)
		if !got.GetResult().GetDuplicate() || got.GetResult().GetSeq() != first.GetResult().GetSeq() ||
			got.GetResult().GetVersion() != first.GetResult().GetVersion() ||
			!slices.Equal(got.GetMessageIds(), first.GetMessageIds()) || !slices.Equal(got.GetTokens(), first.GetTokens()) {
			t.Fatalf("%s: retry = %v, want the original %v marked duplicate", when, got, first)
		}
		other := proto.Clone(x).(*memoryv1.AppendRequest)
		other.Messages[2].Content = "no thanks"
		_, err := h.call(t, "r", other)
		var rej *segmented.Rejection
		if !errors.As(err, &rej) || rej.Code != 409 || rej.Field != "command_id" {
			t.Fatalf("%s: another payload under command id x: %v, want 409 command_id", when, err)
		}
		if n := h.fromLog(t, "r", false).Info().GetTotalMessages(); n != 3 {
			t.Fatalf("%s: log holds %d messages, want 3", when, n)
		}
	}
	check(h, "window")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.dir.Close(ctx); err != nil { // passivates: the snapshot holds the window
		t.Fatal(err)
	}
	check(newHarness(t, nc, nil), "after a restart (snapshot window)")
}

// TestRetryWithoutDigest: a command stored without a digest (a log written
// before digests were kept) cannot be told from another request: a retry
// under its id answers duplicate, with the original's ids, whatever its
// payload.
func TestRetryWithoutDigest(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	h.must(t, "old", &memoryv1.CreateSessionRequest{UserId: "u"})
	st := h.fromLog(t, "old", false)
	// What an older node wrote: the same batch, without command_digest.
	msg := &memoryv1.Message{Id: "legacy-1", Seq: st.Snapshot().GetNextMessageSeq(), Role: memoryv1.Role_ROLE_USER,
		Content: "from an old log", Tokens: 5, Turn: st.Snapshot().GetTurn() + 1, CreatedUnixNano: 1}
	packed, err := h.codec.Pack([]proto.Message{&memoryv1.MessagesAppended{Messages: []*memoryv1.Message{msg}}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := events.EncodeBatch(&memoryv1.EventBatch{CommandId: "legacy", AggregateKind: events.KindSession, AggregateId: "old",
		Version: st.Version() + 1, TimeUnixNano: 1, SchemaVersion: events.SchemaVersion, Events: packed})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.log.Append(context.Background(), events.SessionSubject("old"), st.LastSeq(), "session.old.legacy", data)
	if err != nil {
		t.Fatal(err)
	}
	got := h.must(t, "old", &memoryv1.AppendRequest{CommandId: "legacy", Messages: []*memoryv1.MessageInput{userMsg("something else")}}).(*memoryv1.AppendReply)
	if !got.GetResult().GetDuplicate() || got.GetResult().GetSeq() != res.Seq || !slices.Equal(got.GetMessageIds(), []string{"legacy-1"}) ||
		!slices.Equal(got.GetTokens(), []uint32{5}) {
		t.Fatalf("retry of a digest-less command = %v, want duplicate of seq %d with ids [legacy-1]", got, res.Seq)
	}
}

// TestRetryOfLegacyDigest: a command stored by a build that digested with
// SHA-256 is still recognized: its retry answers duplicate with the
// original's ids, and another request under its id is a 409.
func TestRetryOfLegacyDigest(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, nil)
	h.must(t, "old", &memoryv1.CreateSessionRequest{UserId: "u"})
	st := h.fromLog(t, "old", false)
	req := &memoryv1.AppendRequest{CommandId: "legacy", Messages: []*memoryv1.MessageInput{userMsg("from an old build")}}
	msg := &memoryv1.Message{Id: "legacy-1", Seq: st.Snapshot().GetNextMessageSeq(), Role: memoryv1.Role_ROLE_USER,
		Content: "from an old build", Tokens: 5, Turn: st.Snapshot().GetTurn() + 1, CreatedUnixNano: 1}
	packed, err := h.codec.Pack([]proto.Message{&memoryv1.MessagesAppended{Messages: []*memoryv1.Message{msg}}})
	if err != nil {
		t.Fatal(err)
	}
	legacy := legacyDigest(req)
	if slices.Equal(legacy, CommandDigest(req)) {
		t.Fatal("the legacy digest equals the current one: the test would not test the fallback")
	}
	data, err := events.EncodeBatch(&memoryv1.EventBatch{CommandId: "legacy", CommandDigest: legacy, AggregateKind: events.KindSession,
		AggregateId: "old", Version: st.Version() + 1, TimeUnixNano: 1, SchemaVersion: events.SchemaVersion, Events: packed})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.log.Append(context.Background(), events.SessionSubject("old"), st.LastSeq(), "session.old.legacy", data)
	if err != nil {
		t.Fatal(err)
	}
	got := h.must(t, "old", proto.Clone(req)).(*memoryv1.AppendReply)
	if !got.GetResult().GetDuplicate() || got.GetResult().GetSeq() != res.Seq || !slices.Equal(got.GetMessageIds(), []string{"legacy-1"}) {
		t.Fatalf("retry of a command with a legacy digest = %v, want duplicate of seq %d with ids [legacy-1]", got, res.Seq)
	}
	other := &memoryv1.AppendRequest{CommandId: "legacy", Messages: []*memoryv1.MessageInput{userMsg("something else")}}
	_, err = h.call(t, "old", other)
	var rej *segmented.Rejection
	if !errors.As(err, &rej) || rej.Code != 409 || rej.Field != "command_id" {
		t.Fatalf("another request under a legacy-digest command id: %v, want 409 command_id", err)
	}
}

// TestCommandDigestMatchesStored: the digest of commands of every kind hashes
// the encoding earlier builds hashed (the deterministic encoding of a clone
// with command_id and min_seq cleared and large-data references reduced),
// with BLAKE3, and legacyDigest is the SHA-256 digest they stored, so
// retries of commands stored before still match (sameRequest).
func TestCommandDigestMatchesStored(t *testing.T) {
	encoded := func(m proto.Message) []byte {
		c := proto.Clone(m)
		for _, name := range []protoreflect.Name{"command_id", "min_seq"} {
			if fd := c.ProtoReflect().Descriptor().Fields().ByName(name); fd != nil {
				c.ProtoReflect().Clear(fd)
			}
		}
		if app, ok := c.(*memoryv1.AppendRequest); ok {
			for _, in := range app.GetMessages() {
				if ref := in.GetDataRef(); ref != nil {
					in.Content = ""
					in.DataRef = &memoryv1.DataReference{Sha256: ref.GetSha256(), Size: ref.GetSize()}
				}
			}
		}
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	r := rand.New(rand.NewPCG(7, 7))
	bodies := []proto.Message{
		&memoryv1.PutEntryRequest{CommandId: "c", Key: "k", Value: []byte("v"), Tags: []string{"a", "b"}, Metadata: map[string]string{"x": "1", "y": "2"}, ExpectedVersion: proto.Int64(0)},
		&memoryv1.PromoteRequest{CommandId: "p", MessageIds: []string{"m1", "m2"}, MinSeq: 9},
		&memoryv1.KernelRequest{CommandId: "k"},
		&memoryv1.AppendRequest{CommandId: "d", Messages: []*memoryv1.MessageInput{userMsg("see the result"), {
			Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "t1", Content: "[stored as d1]",
			DataRef: &memoryv1.DataReference{Id: "d1", Sha256: "ab", Size: 9000, StoredUnixNano: 5}}}},
	}
	for i := range 50 {
		bodies = append(bodies, randomCommand(r, i))
	}
	for _, b := range bodies {
		data := encoded(b)
		if got, want := CommandDigest(b), blake3.Sum256(data); !slices.Equal(got, want[:DigestSize]) {
			t.Fatalf("%T: digest %x, BLAKE3 of the stored form %x", b, got, want[:DigestSize])
		}
		if got, want := legacyDigest(b), sha256.Sum256(data); !slices.Equal(got, want[:DigestSize]) {
			t.Fatalf("%T: legacy digest %x, SHA-256 of the stored form %x", b, got, want[:DigestSize])
		}
	}
}
