package events

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func testBatch(t testing.TB, c *Codec, evs ...proto.Message) *memoryv1.EventBatch {
	t.Helper()
	packed, err := c.Pack(evs)
	if err != nil {
		t.Fatal(err)
	}
	return &memoryv1.EventBatch{
		CommandId:     "cmd-1",
		AggregateKind: KindSession,
		AggregateId:   "s1",
		Version:       3,
		TimeUnixNano:  1_700_000_000_000_000_000,
		ActorId:       "agent-7",
		Events:        packed,
	}
}

func TestCodecRoundTrip(t *testing.T) {
	c := NewCodec()
	evs := []proto.Message{
		&memoryv1.SessionCreated{SessionId: "s1", UserId: "u", AgentId: "a"},
		&memoryv1.RomActivated{Version: 2},
		&memoryv1.KernelFactSet{},
		&memoryv1.SummaryReplaced{SummaryId: "x", Text: "short", Tokens: 3},
	}
	b := testBatch(t, c, evs...)
	data, err := EncodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if b.GetSchemaVersion() != SchemaVersion {
		t.Fatalf("EncodeBatch left schema version %d", b.GetSchemaVersion())
	}
	again, _ := EncodeBatch(b)
	if !bytes.Equal(data, again) {
		t.Fatal("EncodeBatch not deterministic")
	}
	got, err := DecodeBatch(data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, b) {
		t.Fatalf("decoded batch differs:\n%v\n%v", got, b)
	}
	out, err := c.Unpack(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(evs) {
		t.Fatalf("%d events, want %d", len(out), len(evs))
	}
	for i := range evs {
		if !proto.Equal(out[i], evs[i]) {
			t.Fatalf("event %d: %v, want %v", i, out[i], evs[i])
		}
	}
	if want := "type.googleapis.com/agentmem.memory.v1.SessionCreated"; got.Events[0].GetTypeUrl() != want {
		t.Fatalf("type URL %q, want %q", got.Events[0].GetTypeUrl(), want)
	}
}

func TestCodecKnowsAllMemoryV1Messages(t *testing.T) {
	c := NewCodec()
	for _, m := range []proto.Message{&memoryv1.EventBatch{}, &memoryv1.SessionSnapshot{}, &memoryv1.L2Archived{}, &memoryv1.SessionStatusChanged{}} {
		if _, err := c.Pack([]proto.Message{m}); err != nil {
			t.Errorf("Pack(%T): %v", m, err)
		}
	}
}

func TestCodecUnknownType(t *testing.T) {
	c := NewCodec()
	if _, err := c.Pack([]proto.Message{wrapperspb.String("x")}); !errors.Is(err, ErrUnknownEventType) {
		t.Fatalf("Pack(foreign type) = %v, want ErrUnknownEventType", err)
	}
	if _, err := c.Pack([]proto.Message{nil}); err == nil {
		t.Fatal("Pack(nil) accepted")
	}
	b := &memoryv1.EventBatch{SchemaVersion: SchemaVersion, Events: []*anypb.Any{{TypeUrl: "type.googleapis.com/agentmem.memory.v1.Gone", Value: []byte{}}}}
	_, err := c.Unpack(b)
	if !errors.Is(err, ErrUnknownEventType) || !strings.Contains(err.Error(), "agentmem.memory.v1.Gone") {
		t.Fatalf("Unpack(unknown) = %v, want ErrUnknownEventType naming the type", err)
	}
}

func TestCodecUpcaster(t *testing.T) {
	c := NewCodec()
	// An old event "agentmem.memory.v1.RomActivatedV0" held the version as a
	// wrapped string; it is read as today's RomActivated.
	old, _ := proto.Marshal(wrapperspb.UInt32(9))
	c.RegisterUpcaster("agentmem.memory.v1.RomActivatedV0", func(data []byte) (proto.Message, error) {
		var w wrapperspb.UInt32Value
		if err := proto.Unmarshal(data, &w); err != nil {
			return nil, err
		}
		return &memoryv1.RomActivated{Version: w.GetValue()}, nil
	})
	b := &memoryv1.EventBatch{SchemaVersion: SchemaVersion, Events: []*anypb.Any{{TypeUrl: "type.googleapis.com/agentmem.memory.v1.RomActivatedV0", Value: old}}}
	out, err := c.Unpack(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := out[0].(*memoryv1.RomActivated); !ok || got.GetVersion() != 9 {
		t.Fatalf("upcast = %v", out[0])
	}
	failing := errors.New("boom")
	c.RegisterUpcaster("agentmem.memory.v1.RomActivatedV0", func([]byte) (proto.Message, error) { return nil, failing })
	if _, err := c.Unpack(b); !errors.Is(err, failing) {
		t.Fatalf("failing upcaster: %v", err)
	}
}

func TestDecodeBatchErrors(t *testing.T) {
	if _, err := DecodeBatch([]byte{0xff, 0xff, 0xff}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("garbage: %v", err)
	}
	noVersion, _ := proto.Marshal(&memoryv1.EventBatch{CommandId: "x"})
	if _, err := DecodeBatch(noVersion); !errors.Is(err, ErrMalformed) {
		t.Fatalf("no schema version: %v", err)
	}
	newer, _ := proto.Marshal(&memoryv1.EventBatch{SchemaVersion: SchemaVersion + 1})
	if _, err := DecodeBatch(newer); !errors.Is(err, ErrUnsupportedSchema) {
		t.Fatalf("newer schema: %v", err)
	}
	c := NewCodec()
	bad := &memoryv1.EventBatch{SchemaVersion: 1, Events: []*anypb.Any{{TypeUrl: "type.googleapis.com/agentmem.memory.v1.RomActivated", Value: []byte{0xff}}}}
	if _, err := c.Unpack(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad event bytes: %v", err)
	}
	if _, err := c.Unpack(nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("nil batch: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	c := NewCodec()
	seed := testBatch(f, c, &memoryv1.SessionCreated{SessionId: "s"}, &memoryv1.RomActivated{Version: 1})
	data, err := EncodeBatch(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte{})
	f.Add([]byte{0x48, 0x01, 0x52, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedSchema) {
				t.Fatalf("DecodeBatch error not classified: %v", err)
			}
			return
		}
		evs, err := c.Unpack(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownEventType) {
				t.Fatalf("Unpack error not classified: %v", err)
			}
			return
		}
		if len(evs) != len(b.GetEvents()) {
			t.Fatalf("%d events from %d", len(evs), len(b.GetEvents()))
		}
		// What decodes re-encodes.
		if _, err := EncodeBatch(b); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
	})
}
