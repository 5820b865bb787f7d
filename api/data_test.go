package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
)

// TestLargeDataAboveMaxPayload puts values bigger than one NATS message
// (the embedded server's max payload is 8 MiB) through the Go client and
// reads them back byte-exact. Before chunked uploads, a 9 MiB put failed
// with "maximum payload exceeded".
func TestLargeDataAboveMaxPayload(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"9 MiB random", randomBytes(9 << 20)},
		{"20 MiB text", bytes.Repeat([]byte("order 17 shipped to Alice in region 3\n"), 20<<20/38)},
		{"64 MiB random (the limit)", randomBytes(64 << 20)},
	} {
		ref, err := c.PutData(ctx, tc.data, "application/octet-stream", map[string]string{"case": tc.name}, time.Hour)
		if err != nil {
			t.Fatalf("%s: put %d bytes: %v", tc.name, len(tc.data), err)
		}
		sum := sha256.Sum256(tc.data)
		if ref.GetSize() != uint64(len(tc.data)) || ref.GetSha256() != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s: reference %v", tc.name, ref)
		}
		got, back, err := c.GetData(ctx, ref.GetId())
		if err != nil {
			t.Fatalf("%s: get: %v", tc.name, err)
		}
		if !bytes.Equal(back, tc.data) || got.GetMetadata()["case"] != tc.name {
			t.Fatalf("%s: got %d bytes back (want %d), ref %v", tc.name, len(back), len(tc.data), got)
		}
	}
	over := make([]byte, 64<<20+1)
	if _, err := c.PutData(ctx, over, "application/octet-stream", nil, time.Hour); client.Code(err) != 413 {
		t.Fatalf("put of 64 MiB + 1: %v, want 413", err)
	}
}
