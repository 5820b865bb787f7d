package placement

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/natsembed"
)

// errDeaf is what deafKV answers while deaf: no answer, as from a bucket
// without quorum.
var errDeaf = errors.New("deaf bucket: no answer")

// deafKV is the bucket as a node sees it while the bucket's stream has no
// quorum (deaf): no write or read is answered and its watch delivers
// nothing; the keys still age out on the server meanwhile.
type deafKV struct {
	jetstream.KeyValue
	deaf atomic.Bool
}

func (k *deafKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if k.deaf.Load() {
		return nil, errDeaf
	}
	return k.KeyValue.Get(ctx, key)
}

func (k *deafKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if k.deaf.Load() {
		return 0, errDeaf
	}
	return k.KeyValue.Put(ctx, key, value)
}

func (k *deafKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if k.deaf.Load() {
		return 0, errDeaf
	}
	return k.KeyValue.Create(ctx, key, value, opts...)
}

func (k *deafKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if k.deaf.Load() {
		return 0, errDeaf
	}
	return k.KeyValue.Update(ctx, key, value, rev)
}

func (k *deafKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	if k.deaf.Load() {
		return errDeaf
	}
	return k.KeyValue.Delete(ctx, key, opts...)
}

func (k *deafKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	w, err := k.KeyValue.WatchAll(ctx, opts...)
	if err != nil {
		return nil, err
	}
	out := &deafWatcher{KeyWatcher: w, ch: make(chan jetstream.KeyValueEntry)}
	go func() {
		defer close(out.ch)
		for e := range w.Updates() {
			if k.deaf.Load() {
				continue
			}
			select {
			case out.ch <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

type deafWatcher struct {
	jetstream.KeyWatcher
	ch chan jetstream.KeyValueEntry
}

func (w *deafWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.ch }

// joinDeaf is join with the bucket behind a deafKV and Hooks.BucketLost
// reading lost.
func joinDeaf(t *testing.T, cfg Config, lost *atomic.Bool) (*member, *deafKV) {
	t.Helper()
	_, nc := natsembed.StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{done: make(chan error, 1), released: map[int]int{}}
	m.t, err = New(t.Context(), js, cfg, Hooks{BucketLost: lost.Load, OnRelease: func(_ context.Context, p int) {
		m.mu.Lock()
		m.released[p]++
		m.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	kv := &deafKV{KeyValue: m.t.kv}
	m.t.kv = kv
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.done <- m.t.Run(ctx) }()
	t.Cleanup(m.stop)
	rctx, rcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer rcancel()
	if err := m.t.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	return m, kv
}

// TestBucketLostKeepsLeases: while the bucket does not answer and
// Hooks.BucketLost says it has no quorum, the node keeps serving every
// partition it held long past its leases (no other node can take them),
// and Owner of a partition it does not hold fails at once with
// ErrBucketLost instead of waiting. Once the bucket is back the leases,
// aged out on the server meanwhile, are dropped and taken again.
func TestBucketLostKeepsLeases(t *testing.T) {
	var lost atomic.Bool
	cfg := testConfig("a")
	a, kv := joinDeaf(t, cfg, &lost)
	aggs := ids(16)
	// One partition handed away before the loss: free, nobody serves it.
	a.t.mu.Lock()
	a.t.releaseAsync(0, true)
	a.t.mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); a.t.Holds(aggs[0]); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("partition 0 not released")
		}
	}
	kv.deaf.Store(true)
	lost.Store(true)
	time.Sleep(3 * cfg.LeaseTTL)
	for p, id := range aggs[1:] {
		if !a.t.Serves(id) {
			t.Errorf("partition %d not served %s into the bucket's loss (lease %s)", p+1, 3*cfg.LeaseTTL, cfg.LeaseTTL)
		}
	}
	if got := a.t.Served(); got != 15 {
		t.Errorf("Served = %d, want 15", got)
	}
	began := time.Now()
	octx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, _, err := a.t.Owner(octx, aggs[0])
	cancel()
	if !errors.Is(err, ErrBucketLost) || !errors.Is(err, ErrNoOwner) {
		t.Errorf("Owner of a free partition while the bucket is lost: %v, want ErrBucketLost", err)
	}
	if took := time.Since(began); took > cfg.Tick {
		t.Errorf("Owner took %s to fail, want at once", took)
	}

	kv.deaf.Store(false)
	lost.Store(false)
	if c := waitExclusive(t, 10*time.Second, a); c[0] != 16 {
		t.Fatalf("a serves %d of 16 once the bucket is back", c[0])
	}
}

// TestBucketSilentHoldsThenDrops: a bucket that does not answer while
// Hooks.BucketLost has not said it lost its quorum (the probe is slower
// than a lease): a lease past its expiry is not served but still held for
// QuorumWait; when BucketLost then says lost, it is served again; once
// BucketLost says the bucket is fine for QuorumWait while the refreshes
// still get no answer, it is dropped as without the hook.
func TestBucketSilentHoldsThenDrops(t *testing.T) {
	var lost atomic.Bool
	cfg := testConfig("a")
	cfg.QuorumWait = 3 * time.Second
	a, kv := joinDeaf(t, cfg, &lost)
	id := ids(16)[0]
	kv.deaf.Store(true)
	for deadline := time.Now().Add(3 * cfg.LeaseTTL); a.t.Serves(id); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still served %s after the bucket went silent (lease %s)", 3*cfg.LeaseTTL, cfg.LeaseTTL)
		}
	}
	if !a.t.Holds(id) {
		t.Fatal("the lease was dropped at its expiry: want it held for QuorumWait")
	}
	lost.Store(true)
	if !a.t.Serves(id) {
		t.Fatal("not served again once BucketLost said lost")
	}
	time.Sleep(cfg.QuorumWait) // the lease stays while lost
	if !a.t.Serves(id) {
		t.Fatal("not served while BucketLost says lost")
	}
	lost.Store(false) // the probe says fine; the refreshes still fail
	if a.t.Serves(id) {
		t.Fatal("served past its lease while BucketLost says fine")
	}
	for deadline := time.Now().Add(cfg.QuorumWait + time.Second); a.t.Holds(id); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still held %s after BucketLost said fine with the refreshes unanswered (QuorumWait %s)", cfg.QuorumWait+time.Second, cfg.QuorumWait)
		}
	}
	a.mu.Lock()
	released := a.released[Partition(id, 16)]
	a.mu.Unlock()
	if released != 1 {
		t.Fatalf("partition released %d times, want 1", released)
	}
}
