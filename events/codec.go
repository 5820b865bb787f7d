package events

import (
	"fmt"
	"sync"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
)

// SchemaVersion is the EventBatch envelope version written by this build.
// DecodeBatch refuses envelopes with a higher version.
const SchemaVersion = 1

// eventPackage is the protobuf package whose messages the codec knows.
const eventPackage protoreflect.FullName = "agentmem.memory.v1"

// Upcaster turns the serialized bytes of an old event type into the current
// message. Upcasters run at read time; the log is never rewritten.
type Upcaster func(data []byte) (proto.Message, error)

// Codec packs events into google.protobuf.Any by protobuf full name and back.
// It knows every message of package agentmem.memory.v1 and the upcasters
// registered for older names. It is safe for concurrent use.
type Codec struct {
	types map[protoreflect.FullName]protoreflect.MessageType // immutable after NewCodec

	mu        sync.RWMutex
	upcasters map[protoreflect.FullName]Upcaster // guarded by mu
}

// NewCodec returns a codec knowing every message in proto/memory/v1.
func NewCodec() *Codec {
	c := &Codec{
		types:     make(map[protoreflect.FullName]protoreflect.MessageType),
		upcasters: make(map[protoreflect.FullName]Upcaster),
	}
	// Referencing the package guarantees its types are registered.
	_ = memoryv1.File_memory_v1_envelope_proto
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if name := mt.Descriptor().FullName(); name.Parent() == eventPackage {
			c.types[name] = mt
		}
		return true
	})
	return c
}

// RegisterUpcaster makes Unpack decode events named oldFullName (a type that
// was renamed or changed incompatibly) with up. An upcaster takes precedence
// over a known type of the same name.
func (c *Codec) RegisterUpcaster(oldFullName string, up Upcaster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.upcasters[protoreflect.FullName(oldFullName)] = up
}

// Pack wraps events into Any values (type URL "type.googleapis.com/<full
// name>", deterministic bytes). Every event must be a known type.
func (c *Codec) Pack(events []proto.Message) ([]*anypb.Any, error) {
	out := make([]*anypb.Any, len(events))
	opts := proto.MarshalOptions{Deterministic: true}
	for i, ev := range events {
		if ev == nil || !ev.ProtoReflect().IsValid() {
			return nil, fmt.Errorf("events: pack event %d: nil message", i)
		}
		name := ev.ProtoReflect().Descriptor().FullName()
		if _, ok := c.types[name]; !ok {
			return nil, fmt.Errorf("%w: %s (event %d)", ErrUnknownEventType, name, i)
		}
		a := new(anypb.Any)
		if err := anypb.MarshalFrom(a, ev, opts); err != nil {
			return nil, fmt.Errorf("events: pack event %d (%s): %w", i, name, err)
		}
		out[i] = a
	}
	return out, nil
}

// Unpack decodes the events of a batch, in order, running upcasters for old
// type names. An unknown type is an error naming it and wrapping
// ErrUnknownEventType; undecodable bytes wrap ErrMalformed.
func (c *Codec) Unpack(b *memoryv1.EventBatch) ([]proto.Message, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil batch", ErrMalformed)
	}
	out := make([]proto.Message, len(b.GetEvents()))
	for i, a := range b.GetEvents() {
		m, err := c.unpackOne(a)
		if err != nil {
			return nil, fmt.Errorf("events: unpack event %d of command %q: %w", i, b.GetCommandId(), err)
		}
		out[i] = m
	}
	return out, nil
}

func (c *Codec) unpackOne(a *anypb.Any) (proto.Message, error) {
	if a == nil {
		return nil, fmt.Errorf("%w: nil event", ErrMalformed)
	}
	name := a.MessageName()
	if !name.IsValid() {
		return nil, fmt.Errorf("%w: bad type URL %q", ErrMalformed, a.GetTypeUrl())
	}
	c.mu.RLock()
	up := c.upcasters[name]
	c.mu.RUnlock()
	if up != nil {
		m, err := up(a.GetValue())
		if err != nil {
			return nil, fmt.Errorf("upcast %s: %w", name, err)
		}
		if m == nil {
			return nil, fmt.Errorf("upcast %s: upcaster returned nil", name)
		}
		return m, nil
	}
	mt, ok := c.types[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownEventType, name)
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(a.GetValue(), m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, name, err)
	}
	return m, nil
}

// EncodeBatch serializes b deterministically (same batch, same bytes). A zero
// SchemaVersion is set to SchemaVersion first (b is modified).
func EncodeBatch(b *memoryv1.EventBatch) ([]byte, error) {
	if b == nil {
		return nil, fmt.Errorf("events: encode: nil batch")
	}
	if b.SchemaVersion == 0 {
		b.SchemaVersion = SchemaVersion
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("events: encode batch %q: %w", b.GetCommandId(), err)
	}
	return data, nil
}

// DecodeBatch parses an envelope read from the log. Bytes that are not an
// EventBatch, or one without a schema version, wrap ErrMalformed; a newer
// schema version wraps ErrUnsupportedSchema. Events stay packed: see Unpack.
func DecodeBatch(data []byte) (*memoryv1.EventBatch, error) {
	b := new(memoryv1.EventBatch)
	if err := proto.Unmarshal(data, b); err != nil {
		return nil, fmt.Errorf("%w: event batch: %v", ErrMalformed, err)
	}
	switch v := b.GetSchemaVersion(); {
	case v == 0:
		return nil, fmt.Errorf("%w: event batch without schema_version", ErrMalformed)
	case v > SchemaVersion:
		return nil, fmt.Errorf("%w: event batch schema %d, this build reads up to %d", ErrUnsupportedSchema, v, SchemaVersion)
	}
	return b, nil
}
