package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// keyLog is what the one writer of one key knows about it.
type keyLog struct {
	scope client.Scope
	key   string
	// values[v-1] is the value acknowledged at version v.
	values   [][]byte
	inflight *memoryv1.PutEntryRequest // sent, not acknowledged when the node died
}

// dataLog is one acknowledged large-data put.
type dataLog struct {
	ref *memoryv1.DataReference
	sum [32]byte
}

// crashValue is the value of version v of key (compressible above 1 KiB
// every third version, so both stored forms are exercised).
func crashValue(key string, v int) []byte {
	s := fmt.Sprintf("%s version %d: the party reached the gate at turn %d", key, v, v*7)
	if v%3 == 0 {
		return bytes.Repeat([]byte(s+"\n"), 40)
	}
	return []byte(s)
}

// crashData is the i-th large-data payload of worker w (~20-60 KiB).
func crashData(w, i int) []byte {
	var b bytes.Buffer
	for j := 0; b.Len() < (20+(i%3)*20)<<10; j++ {
		fmt.Fprintf(&b, "worker %d object %d line %d: %x\n", w, i, j, sha256.Sum256([]byte{byte(w), byte(i), byte(j)}))
	}
	return b.Bytes()
}

// TestCrashScopeEntriesAndLargeData runs the node binary, writes versioned
// agent entries, shared-scope entries and large data from concurrent
// clients, kill -9s it mid-load and restarts it. Named guarantees checked
// after the restart:
//   - no acknowledged version lost: every acknowledged version of every key
//     reads back (by number and in its history) with the exact value;
//   - no gap, in order: a key's history is versions 1..n with nothing
//     between the acknowledged ones;
//   - at most the one in-flight put extra, and retrying it with the same
//     command id applies it exactly once;
//   - every acknowledged large-data reference reads back with bytes whose
//     sha256 matches the reference (verified on a cold memory tier).
func TestCrashScopeEntriesAndLargeData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the node binary")
	}
	bin := buildNode(t)
	dataDir := t.TempDir()
	addr := freePort(t)
	proc := startNode(t, bin, dataDir, addr)

	const workers, keysPerWorker = 8, 4
	var (
		keys   [workers][]*keyLog
		data   [workers][]dataLog
		stop   atomic.Bool
		acked  atomic.Int64
		dataOK atomic.Int64
		wg     sync.WaitGroup
	)
	ctx := context.Background()
	for w := range workers {
		for k := range keysPerWorker {
			// Agent scopes are private to one worker; the workflow scope is
			// shared by all, each worker writing its own keys.
			keys[w] = append(keys[w],
				&keyLog{scope: client.Agent(fmt.Sprintf("agent-%d", w)), key: fmt.Sprintf("memo-%d", k)},
				&keyLog{scope: client.Workflow("raid"), key: fmt.Sprintf("w%d/log-%d", w, k)})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := nats.Connect("nats://"+addr, nats.MaxReconnects(0))
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			wc := client.New(nc).WithTimeout(2 * time.Second)
			for i := 0; !stop.Load(); i++ {
				if i%10 == 9 {
					b := crashData(w, i)
					ref, err := wc.PutData(ctx, b, "text/plain", map[string]string{"worker": fmt.Sprint(w)}, time.Hour)
					if err != nil {
						return // the node died
					}
					data[w] = append(data[w], dataLog{ref: ref, sum: sha256.Sum256(b)})
					dataOK.Add(1)
					continue
				}
				kl := keys[w][i%len(keys[w])]
				v := len(kl.values)
				req := &memoryv1.PutEntryRequest{Key: kl.key, Value: crashValue(kl.key, v+1), ExpectedVersion: ptr(int64(v)), Tags: []string{"crash"}}
				kl.inflight = req
				rep, err := wc.Put(ctx, kl.scope, req)
				if err != nil {
					return // the node died: req stays in flight
				}
				if got := rep.GetEntry().GetVersion(); got != uint64(v+1) {
					t.Errorf("%v %s: put acknowledged version %d, want %d", kl.scope, kl.key, got, v+1)
					return
				}
				kl.inflight = nil
				kl.values = append(kl.values, req.Value)
				acked.Add(1)
			}
		}()
	}
	time.Sleep(*crashLoad)
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	stop.Store(true)
	wg.Wait()
	t.Logf("acknowledged before kill -9: %d entry versions, %d large-data puts", acked.Load(), dataOK.Load())
	if acked.Load() < 100 || dataOK.Load() < 8 {
		t.Fatalf("only %d puts and %d data puts acknowledged before the kill: load too light to test anything", acked.Load(), dataOK.Load())
	}

	startNode(t, bin, dataDir, addr)
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := client.New(nc)
	versions, retried, inflightStored := 0, 0, 0
	for w := range workers {
		for _, kl := range keys[w] {
			n := len(kl.values)
			if n == 0 && kl.inflight == nil {
				continue
			}
			hist, err := c.History(ctx, kl.scope, kl.key)
			if err != nil && !(n == 0 && client.Code(err) == 404) {
				t.Fatalf("%v %s: history after restart: %v", kl.scope, kl.key, err)
			}
			extra := len(hist) - n
			if extra < 0 || extra > 1 || extra == 1 && kl.inflight == nil {
				t.Errorf("%v %s: %d versions after restart, acknowledged %d (in flight: %v)", kl.scope, kl.key, len(hist), n, kl.inflight != nil)
				continue
			}
			for i, e := range hist[:n] {
				if e.GetVersion() != uint64(i+1) || !bytes.Equal(e.GetValue(), kl.values[i]) || e.GetDeleted() {
					t.Errorf("%v %s: history[%d] = v%d %.40q, want v%d %.40q", kl.scope, kl.key, i, e.GetVersion(), e.GetValue(), i+1, kl.values[i])
				}
				versions++
			}
			if n > 0 {
				// By number too, not only in the history.
				e, err := c.GetEntry(ctx, kl.scope, kl.key, uint64(n))
				if err != nil || !bytes.Equal(e.GetValue(), kl.values[n-1]) {
					t.Errorf("%v %s: get v%d after restart: %v", kl.scope, kl.key, n, err)
				}
			}
			if kl.inflight == nil {
				continue
			}
			if extra == 1 {
				inflightStored++
				if !bytes.Equal(hist[n].GetValue(), kl.inflight.GetValue()) {
					t.Errorf("%v %s: the extra version is not the in-flight put", kl.scope, kl.key)
				}
			}
			rep, err := c.Put(ctx, kl.scope, kl.inflight)
			if err != nil {
				t.Fatalf("%v %s: retry the in-flight put: %v", kl.scope, kl.key, err)
			}
			if rep.GetResult().GetDuplicate() != (extra == 1) {
				t.Errorf("%v %s: retry duplicate=%v, stored before the crash=%v", kl.scope, kl.key, rep.GetResult().GetDuplicate(), extra == 1)
			}
			after, err := c.History(ctx, kl.scope, kl.key)
			if err != nil || len(after) != n+1 {
				t.Errorf("%v %s: %d versions after the retry (%v), want %d", kl.scope, kl.key, len(after), err, n+1)
			}
			retried++
		}
	}
	refs := 0
	for w := range workers {
		for _, d := range data[w] {
			ref, b, err := c.GetData(ctx, d.ref.GetId())
			if err != nil {
				t.Errorf("large data %s (worker %d) after restart: %v", d.ref.GetId(), w, err)
				continue
			}
			sum := sha256.Sum256(b)
			if sum != d.sum || ref.GetSha256() != hex.EncodeToString(d.sum[:]) || ref.GetSize() != d.ref.GetSize() {
				t.Errorf("large data %s: sha256 %x, reference %s, want %x", d.ref.GetId(), sum, ref.GetSha256(), d.sum)
			}
			refs++
		}
	}
	t.Logf("after restart: %d acknowledged versions read back, %d in-flight puts retried (%d had been stored), %d large-data references verified",
		versions, retried, inflightStored, refs)
}

func ptr[T any](v T) *T { return &v }
