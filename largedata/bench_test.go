package largedata

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// Benchmarks run on natsembed.StartForTest: this process, loopback, one
// replica, file storage. Data is text-like (zstd shrinks it), the common case
// for tool results; the raw engine stores the same bytes uncompressed.
var benchSizes = []struct {
	name string
	n    int
}{
	{"1KB", 1 << 10},
	{"100KB", 100 << 10},
	{"10MB", 10 << 20},
}

func BenchmarkPut(b *testing.B) {
	e := newEnv(b)
	s := e.store(b, nil)
	ctx := context.Background()
	for _, sz := range benchSizes {
		data := compressible(sz.n)
		b.Run(sz.name, func(b *testing.B) {
			b.SetBytes(int64(sz.n))
			for b.Loop() {
				if _, _, err := s.Put(ctx, data, "text/plain", nil, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	tiers := []struct {
		name string
		s    *Store
	}{
		{"memory-tier", e.store(b, nil)},
		{"durable", e.store(b, func(c *Config) { c.MemoryBytes = 0 })},
	}
	for _, tier := range tiers {
		for _, sz := range benchSizes {
			data := compressible(sz.n)
			ref, _, err := tier.s.Put(ctx, data, "text/plain", nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/%s", tier.name, sz.name), func(b *testing.B) {
				b.SetBytes(int64(sz.n))
				for b.Loop() {
					_, got, err := tier.s.Get(ctx, ref.GetId())
					if err != nil || len(got) != sz.n {
						b.Fatalf("get: %v (%d bytes)", err, len(got))
					}
				}
			})
		}
	}
}

// BenchmarkRawObjectStore is the engine underneath: plain PutBytes and
// GetBytes on a bucket, no compression, no checksum of ours, no event.
func BenchmarkRawObjectStore(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	obj, err := e.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "RAW", Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	for _, sz := range benchSizes {
		data := compressible(sz.n)
		b.Run("put/"+sz.name, func(b *testing.B) {
			b.SetBytes(int64(sz.n))
			i := 0
			for b.Loop() {
				i++
				if _, err := obj.PutBytes(ctx, fmt.Sprintf("put-%s-%d", sz.name, i), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, sz := range benchSizes {
		data := compressible(sz.n)
		name := "get-" + sz.name
		if _, err := obj.PutBytes(ctx, name, data); err != nil {
			b.Fatal(err)
		}
		b.Run("get/"+sz.name, func(b *testing.B) {
			b.SetBytes(int64(sz.n))
			for b.Loop() {
				got, err := obj.GetBytes(ctx, name)
				if err != nil || !bytes.Equal(got[:8], data[:8]) {
					b.Fatalf("get: %v", err)
				}
			}
		})
	}
}
