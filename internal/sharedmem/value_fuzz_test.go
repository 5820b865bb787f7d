package sharedmem

import (
	"bytes"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func FuzzDecodeValue(f *testing.F) {
	rep := bytes.Repeat([]byte("fuzz me "), 300)
	enc, _ := EncodeValue(rep)
	f.Add(enc, true, uint32(len(rep)))
	f.Add(enc[:len(enc)/2], true, uint32(len(rep)))
	f.Add([]byte("raw"), false, uint32(3))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0}, true, uint32(0))
	f.Add([]byte{}, true, uint32(MaxValueBytes))
	f.Fuzz(func(t *testing.T, value []byte, compressed bool, size uint32) {
		e := &memoryv1.Entry{Value: value, Compressed: compressed, Size: size}
		v, err := DecodeValue(e)
		if err != nil {
			return
		}
		if len(v) != int(size) {
			t.Fatalf("decoded %d bytes, size %d", len(v), size)
		}
		// What decodes re-encodes to something that decodes the same.
		stored, c := EncodeValue(v)
		back, err := DecodeValue(&memoryv1.Entry{Value: stored, Compressed: c, Size: size})
		if err != nil || !bytes.Equal(back, v) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
