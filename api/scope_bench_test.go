package api_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Benchmarks of scope entries and large data end to end, each beside the
// raw JetStream engine on the same embedded server in the same run (see
// the setup described at the top of bench_test.go: loopback, one replica,
// file storage, sync default). One client, one request at a time: the
// figures are latencies (p50-µs, p99-µs), not throughput under load.
//
// In-process figures without NATS: internal/sharedmem BenchmarkGet (an
// entry get from a 10,000-key scope state, the work the actor does for
// "get") and largedata BenchmarkPut/BenchmarkGet (1KB, 100KB, 10MB).

const (
	benchScopeOps    = 500 // puts per agent scope before moving to a fresh one
	benchScopeKeys   = 50
	benchEntryBytes  = 200
	benchKVBucket    = "SCOPEBENCH_KV"
	benchObjBucket   = "SCOPEBENCH_OBJ"
	benchGetKeyCount = 100
)

func benchEntryValue(i int) []byte { return []byte(benchContent(i)[:benchEntryBytes]) }

// BenchmarkScopeEntry: put (durable: acknowledged after JetStream stored
// the batch) and get (answered by the scope's live actor) over NATS, beside
// a JetStream KV put and get of the same bytes.
func BenchmarkScopeEntry(b *testing.B) {
	_, nc := node.StartForTest(b, nil)
	c := client.New(nc)
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: benchKVBucket, Storage: jetstream.FileStorage, History: 1})
	if err != nil {
		b.Fatal(err)
	}
	var agents int
	b.Run("put/api", func(b *testing.B) {
		var lat []time.Duration
		begin, i := time.Now(), 0
		var sc client.Scope
		for b.Loop() {
			if i%benchScopeOps == 0 {
				agents++
				sc = client.Agent(fmt.Sprintf("bench-put-%d", agents))
			}
			start := time.Now()
			_, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: fmt.Sprintf("key-%d", i%benchScopeKeys), Value: benchEntryValue(i)})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportLatency(b, lat, time.Since(begin), "puts/s")
	})
	b.Run("put/jetstream-kv", func(b *testing.B) {
		var lat []time.Duration
		begin, i := time.Now(), 0
		for b.Loop() {
			start := time.Now()
			_, err := kv.Put(ctx, fmt.Sprintf("key-%d", i%benchScopeKeys), benchEntryValue(i))
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportLatency(b, lat, time.Since(begin), "puts/s")
	})

	sc := client.Agent("bench-get")
	for i := range benchGetKeyCount {
		key := fmt.Sprintf("key-%d", i)
		if _, err := c.Put(ctx, sc, &memoryv1.PutEntryRequest{Key: key, Value: benchEntryValue(i)}); err != nil {
			b.Fatal(err)
		}
		if _, err := kv.Put(ctx, key, benchEntryValue(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("get/api", func(b *testing.B) {
		var lat []time.Duration
		begin, i := time.Now(), 0
		for b.Loop() {
			start := time.Now()
			e, err := c.GetEntry(ctx, sc, fmt.Sprintf("key-%d", i%benchGetKeyCount), 0)
			lat = append(lat, time.Since(start))
			if err != nil || len(e.GetValue()) != benchEntryBytes {
				b.Fatalf("get: %v", err)
			}
			i++
		}
		reportLatency(b, lat, time.Since(begin), "gets/s")
	})
	b.Run("get/jetstream-kv", func(b *testing.B) {
		var lat []time.Duration
		begin, i := time.Now(), 0
		for b.Loop() {
			start := time.Now()
			e, err := kv.Get(ctx, fmt.Sprintf("key-%d", i%benchGetKeyCount))
			lat = append(lat, time.Since(start))
			if err != nil || len(e.Value()) != benchEntryBytes {
				b.Fatalf("get: %v", err)
			}
			i++
		}
		reportLatency(b, lat, time.Since(begin), "gets/s")
	})
}

// benchDataSizes are the large-data sizes. 10MB does not fit one NATS
// message on the embedded server (max_payload 8 MiB): the client sends it
// in parts (mem.v1.data.upload, then the commit) and reads it in ranges.
var benchDataSizes = []struct {
	name string
	n    int
}{
	{"1KB", 1 << 10},
	{"100KB", 100 << 10},
	{"10MB", 10 << 20},
}

// textData is n bytes of text-like data (zstd shrinks it, as it does tool
// results).
func textData(n int) []byte {
	var buf bytes.Buffer
	for i := 0; buf.Len() < n; i++ {
		fmt.Fprintf(&buf, "row %d: order %d shipped to customer %d in region %d, status ok\n", i, i*7919%100000, i%997, i%7)
	}
	return buf.Bytes()[:n]
}

// BenchmarkScopeLargeData: mem.v1.data.put (object store write + DataStored
// event) and mem.v1.data.get (from the memory tier: the default node keeps
// recently put data in memory) over NATS, beside a raw JetStream object
// store PutBytes/GetBytes of the same bytes on the same server.
func BenchmarkScopeLargeData(b *testing.B) {
	_, nc := node.StartForTest(b, nil)
	c := client.New(nc)
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	obj, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: benchObjBucket, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	for _, sz := range benchDataSizes {
		data := textData(sz.n)
		var ref *memoryv1.DataReference
		b.Run("put/api/"+sz.name, func(b *testing.B) {
			b.SetBytes(int64(sz.n))
			var lat []time.Duration
			begin := time.Now()
			for b.Loop() {
				start := time.Now()
				r, err := c.PutData(ctx, data, "text/plain", nil, time.Hour)
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				ref = r
			}
			reportLatency(b, lat, time.Since(begin), "puts/s")
		})
		b.Run("get/api/"+sz.name, func(b *testing.B) {
			if ref == nil {
				b.Skipf("nothing stored over the API at %s; see largedata BenchmarkGet/*/%s (in process)", sz.name, sz.name)
			}
			b.SetBytes(int64(sz.n))
			var lat []time.Duration
			begin := time.Now()
			for b.Loop() {
				start := time.Now()
				_, got, err := c.GetData(ctx, ref.GetId())
				lat = append(lat, time.Since(start))
				if err != nil || len(got) != sz.n {
					b.Fatalf("get: %v (%d bytes)", err, len(got))
				}
			}
			reportLatency(b, lat, time.Since(begin), "gets/s")
		})
		b.Run("put/objectstore/"+sz.name, func(b *testing.B) {
			b.SetBytes(int64(sz.n))
			var lat []time.Duration
			begin, i := time.Now(), 0
			for b.Loop() {
				i++
				start := time.Now()
				_, err := obj.PutBytes(ctx, fmt.Sprintf("%s-%d", sz.name, i%10), data)
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
			}
			reportLatency(b, lat, time.Since(begin), "puts/s")
		})
		b.Run("get/objectstore/"+sz.name, func(b *testing.B) {
			name := "get-" + sz.name
			if _, err := obj.PutBytes(ctx, name, data); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(sz.n))
			var lat []time.Duration
			begin := time.Now()
			for b.Loop() {
				start := time.Now()
				got, err := obj.GetBytes(ctx, name)
				lat = append(lat, time.Since(start))
				if err != nil || len(got) != sz.n {
					b.Fatalf("get: %v", err)
				}
			}
			reportLatency(b, lat, time.Since(begin), "gets/s")
		})
	}
}
