package actors

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/cpustat"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// benchValue100KB is a 100 KB JSON-lines value (compressible, as tool
// results and notes are).
func benchValue100KB(seed int) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < 100<<10; i++ {
		fmt.Fprintf(&sb, `{"id":%d,"customer":"cust-%d","note":"order %d shipped to warehouse %d; total %d.%02d EUR"}`+"\n",
			i+seed, (i*7+seed)%1000, i, i%13, (i*31+seed)%997, i%100)
	}
	return []byte(sb.String()[:100<<10])
}

// BenchmarkScopeValue100KB: a shared value of 100 KB put (durable: stored
// by JetStream, embedded, before the reply) and got through a scope actor,
// in process (no NATS request), beside a plain map under a mutex (the
// in-memory shared store a framework without a log keeps), same run.
func BenchmarkScopeValue100KB(b *testing.B) {
	e := newBenchEnv(b)
	d := e.newDir(b, e.bucket(b, "SCOPE_VALUE_BENCH"), nil)
	values := [4][]byte{benchValue100KB(0), benchValue100KB(1), benchValue100KB(2), benchValue100KB(3)}
	call := func(body any) (*memoryv1.EntryReply, error) {
		ch := make(chan struct {
			m   *memoryv1.EntryReply
			err error
		}, 1)
		err := d.DispatchScope(sharedmem.KindProject, "bench", nil, body, func(m proto.Message, err error) {
			r, _ := m.(*memoryv1.EntryReply)
			ch <- struct {
				m   *memoryv1.EntryReply
				err error
			}{r, err}
		})
		if err != nil {
			return nil, err
		}
		r := <-ch
		return r.m, r.err
	}
	b.Run("put/actor", func(b *testing.B) {
		var lat []time.Duration
		i := 0
		cpu := cpustat.Start()
		for b.Loop() {
			start := time.Now()
			_, err := call(&memoryv1.PutEntryRequest{Key: fmt.Sprintf("k%d", i%16), Value: values[i%4], CommandId: uuid.NewString()})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
		benchPercentiles(b, lat)
		cpu.Report(b, i)
	})
	b.Run("get/actor", func(b *testing.B) {
		var lat []time.Duration
		i := 0
		cpu := cpustat.Start()
		for b.Loop() {
			start := time.Now()
			r, err := call(&memoryv1.GetEntryRequest{Key: fmt.Sprintf("k%d", i%16)})
			lat = append(lat, time.Since(start))
			if err != nil || len(r.GetEntry().GetValue()) != 100<<10 {
				b.Fatalf("get: %v", err)
			}
			i++
		}
		benchPercentiles(b, lat)
		cpu.Report(b, i)
	})
	var (
		mu sync.Mutex
		m  = map[string][]byte{}
	)
	b.Run("put/map", func(b *testing.B) {
		var lat []time.Duration
		i := 0
		for b.Loop() {
			start := time.Now()
			v := slices.Clone(values[i%4])
			mu.Lock()
			m[fmt.Sprintf("k%d", i%16)] = v
			mu.Unlock()
			lat = append(lat, time.Since(start))
			i++
		}
		benchPercentiles(b, lat)
	})
	b.Run("get/map", func(b *testing.B) {
		var lat []time.Duration
		i := 0
		for b.Loop() {
			start := time.Now()
			mu.Lock()
			v := slices.Clone(m[fmt.Sprintf("k%d", i%16)])
			mu.Unlock()
			lat = append(lat, time.Since(start))
			if len(v) != 100<<10 {
				b.Fatal("get: missing")
			}
			i++
		}
		benchPercentiles(b, lat)
	})
}
