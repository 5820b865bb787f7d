package sharedmem

import (
	"fmt"
	"slices"
	"sync"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"
)

// Compression levels, chosen by BenchmarkValue100KB and by size: a put
// compresses inside the scope actor, on the request's path, and the time is
// in large values (100 KB of JSON lines: SpeedDefault 0.7-1.0 ms,
// SpeedFastest 0.45-0.6 ms and 4 % more bytes; 16 KB: 1.4x faster, smaller).
// Values from FastLevelFrom bytes are compressed at SpeedFastest; smaller
// ones at SpeedDefault as before (a few µs either way, and their stored
// bytes stay those of earlier builds, which golden files pin). Every level
// writes standard zstd frames: values stored at any level decode the same
// (TestDecodeValueOtherLevels).
const FastLevelFrom = 16 << 10

// newEncoder returns an encoder at level for values of at most
// MaxValueBytes.
func newEncoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		zstd.WithEncoderLevel(level),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(MaxValueBytes),
		zstd.WithZeroFrames(true))
}

// The codecs are shared: EncodeAll and DecodeAll are safe for concurrent use
// and start no goroutines.
var (
	encoder     = sync.OnceValues(func() (*zstd.Encoder, error) { return newEncoder(zstd.SpeedDefault) })
	fastEncoder = sync.OnceValues(func() (*zstd.Encoder, error) { return newEncoder(zstd.SpeedFastest) })
	decoder     = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxValueBytes),
			zstd.WithDecoderMaxWindow(MaxValueBytes),
			zstd.WithDecodeAllCapLimit(true))
	})
)

// EncodeValue returns the stored form of an original value: zstd when the
// value is at least CompressThreshold bytes and the compressed form is
// smaller, the original bytes otherwise. The result never aliases v.
//
// Only decisions call it; the stored bytes are recorded in the events, so
// replay never depends on the encoder (or on its version).
func EncodeValue(v []byte) (stored []byte, compressed bool) {
	level := encoder
	if len(v) >= FastLevelFrom {
		level = fastEncoder
	}
	enc, err := level()
	if err != nil {
		enc = nil
	}
	return encodeWith(enc, v)
}

// encodeWith is EncodeValue with enc (nil: store v as it is).
func encodeWith(enc *zstd.Encoder, v []byte) (stored []byte, compressed bool) {
	if enc != nil && len(v) >= CompressThreshold {
		out := enc.EncodeAll(v, make([]byte, 0, len(v)))
		if len(out) < len(v) {
			return out, true
		}
	}
	return slices.Clone(v), false
}

// DecodeValue returns the original bytes of an entry's value (nil for an
// empty value). It never decodes more than e.Size bytes: a value that does
// not decode to exactly e.Size bytes is an error wrapping ErrCorruptValue.
func DecodeValue(e *memoryv1.Entry) ([]byte, error) {
	size := int(e.GetSize())
	if size > MaxValueBytes {
		return nil, fmt.Errorf("%w: size %d exceeds %d", ErrCorruptValue, size, MaxValueBytes)
	}
	if !e.GetCompressed() {
		if len(e.GetValue()) != size {
			return nil, fmt.Errorf("%w: %d stored bytes, size says %d", ErrCorruptValue, len(e.GetValue()), size)
		}
		return slices.Clone(e.GetValue()), nil
	}
	var h zstd.Header
	if err := h.Decode(e.GetValue()); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptValue, err)
	}
	if h.HasFCS && h.FrameContentSize != uint64(size) {
		return nil, fmt.Errorf("%w: frame of %d bytes, size says %d", ErrCorruptValue, h.FrameContentSize, size)
	}
	dec, err := decoder()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptValue, err)
	}
	out, err := dec.DecodeAll(e.GetValue(), make([]byte, 0, size))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptValue, err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("%w: decoded %d bytes, size says %d", ErrCorruptValue, len(out), size)
	}
	if size == 0 {
		return nil, nil
	}
	return out, nil
}

// Plain returns a clone of e with its original value and compressed=false:
// what readers and watchers get.
func Plain(e *memoryv1.Entry) (*memoryv1.Entry, error) {
	if e == nil {
		return nil, nil
	}
	if !e.GetCompressed() {
		if len(e.GetValue()) != int(e.GetSize()) {
			return nil, fmt.Errorf("%w: %d stored bytes, size says %d", ErrCorruptValue, len(e.GetValue()), e.GetSize())
		}
		return proto.Clone(e).(*memoryv1.Entry), nil
	}
	v, err := DecodeValue(e)
	if err != nil {
		return nil, err
	}
	c := proto.Clone(e).(*memoryv1.Entry)
	c.Value, c.Compressed = v, false
	return c, nil
}
