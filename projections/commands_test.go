package projections

import (
	"bytes"
	"errors"
	"testing"
)

// TestCommandValue: a value written with a digest reads back with it; a
// value written before digests were kept (16 bytes) reads back without one;
// anything else is corrupt.
func TestCommandValue(t *testing.T) {
	digest := bytes.Repeat([]byte{0xab}, 16)
	for _, tc := range []struct {
		name   string
		v      []byte
		digest []byte
	}{
		{"with digest", commandValue(7, 3, digest), digest},
		{"before digests", commandValue(7, 3, nil), nil},
	} {
		seq, version, got, err := parseCommandValue(tc.v)
		if err != nil || seq != 7 || version != 3 || !bytes.Equal(got, tc.digest) {
			t.Fatalf("%s: %d %d %x %v", tc.name, seq, version, got, err)
		}
	}
	if len(commandValue(7, 3, nil)) != 16 {
		t.Fatal("a value without a digest is not the old 16-byte layout")
	}
	for _, bad := range [][]byte{nil, make([]byte, 15), make([]byte, 16+33)} {
		if _, _, _, err := parseCommandValue(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d bytes: %v, want ErrCorrupt", len(bad), err)
		}
	}
}
