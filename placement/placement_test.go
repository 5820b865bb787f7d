package placement

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/natsembed"
)

// member is one running table.
type member struct {
	t        *Table
	cancel   context.CancelFunc
	done     chan error
	mu       sync.Mutex
	released map[int]int
}

func testConfig(id string) Config {
	cfg := DefaultConfig()
	cfg.NodeID, cfg.Partitions, cfg.LeaseTTL, cfg.Tick = id, 16, time.Second, 50*time.Millisecond
	return cfg
}

func join(t *testing.T, nc *nats.Conn, cfg Config) *member {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{done: make(chan error, 1), released: map[int]int{}}
	m.t, err = New(t.Context(), js, cfg, Hooks{OnRelease: func(_ context.Context, p int) {
		m.mu.Lock()
		m.released[p]++
		m.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.done <- m.t.Run(ctx) }()
	t.Cleanup(m.stop)
	rctx, rcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer rcancel()
	if err := m.t.Ready(rctx); err != nil {
		t.Fatalf("%s not ready: %v", cfg.NodeID, err)
	}
	return m
}

// stop ends Run without handing anything over (a crash, as the others see it).
func (m *member) stop() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
		m.cancel = nil
	}
}

// ids returns one aggregate id per partition.
func ids(n int) []string {
	out := make([]string, n)
	for i := 0; out[n-1] == "" || func() bool {
		for _, s := range out {
			if s == "" {
				return true
			}
		}
		return false
	}(); i++ {
		id := fmt.Sprintf("s-%d", i)
		if p := Partition(id, n); out[p] == "" {
			out[p] = id
		}
	}
	return out
}

// waitExclusive waits until every partition is served by exactly one of
// ms and each of ms serves some, and returns how many each serves.
func waitExclusive(t *testing.T, within time.Duration, ms ...*member) []int {
	t.Helper()
	aggs := ids(16)
	deadline := time.Now().Add(within)
	for {
		counts := make([]int, len(ms))
		ok := true
		for _, id := range aggs {
			n := 0
			for i, m := range ms {
				if m.t.Serves(id) {
					n++
					counts[i]++
				}
			}
			if n > 1 {
				t.Fatalf("aggregate %s served by %d nodes at once", id, n)
			}
			ok = ok && n == 1
		}
		for _, c := range counts {
			ok = ok && c > 0
		}
		if ok {
			return counts
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every partition served by exactly one node within %s: %v", within, counts)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPlacementSpreadsRebalancesAndFailsOver(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	a := join(t, nc, testConfig("a"))
	if c := waitExclusive(t, 5*time.Second, a); c[0] != 16 {
		t.Fatalf("a alone serves %d of 16", c[0])
	}
	b := join(t, nc, testConfig("b"))
	c := waitExclusive(t, 5*time.Second, a, b)
	if c[0] == 0 || c[1] == 0 {
		t.Fatalf("partitions not spread over a and b: %v", c)
	}
	a.mu.Lock()
	handed := len(a.released)
	a.mu.Unlock()
	if handed != c[1] {
		t.Fatalf("a released %d partitions to b, b serves %d", handed, c[1])
	}
	cn := join(t, nc, testConfig("c"))
	waitExclusive(t, 5*time.Second, a, b, cn)

	// Owner agrees with Serves, from every node.
	for _, id := range ids(16) {
		var owner string
		for _, m := range []*member{a, b, cn} {
			if m.t.Serves(id) {
				owner = m.t.NodeID()
			}
		}
		for _, m := range []*member{a, b, cn} {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			got, local, err := m.t.Owner(ctx, id)
			cancel()
			if err != nil || got != owner || local != (owner == m.t.NodeID()) {
				t.Fatalf("%s: Owner(%s) = %s, %v, %v; serving node %s", m.t.NodeID(), id, got, local, err, owner)
			}
		}
	}

	// A clean leave: the others hold everything without waiting for a TTL.
	var bHeld string
	for _, id := range ids(200) {
		if b.t.Serves(id) {
			bHeld = id
			break
		}
	}
	if bHeld == "" || !b.t.Holds(bHeld) {
		t.Fatalf("b serves no aggregate, or does not hold the one it serves (%q)", bHeld)
	}
	start := time.Now()
	if err := b.t.Leave(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b.t.Holds(bHeld) {
		t.Fatalf("b still holds %s after leaving", bHeld)
	}
	b.stop()
	waitExclusive(t, 900*time.Millisecond, a, cn)
	t.Logf("handover after leave: %s", time.Since(start))

	// A crash: c stops refreshing; a takes everything once the leases age out.
	cn.stop()
	start = time.Now()
	cTTL := testConfig("c").LeaseTTL
	if c := waitExclusive(t, 3*cTTL+time.Second, a); c[0] != 16 {
		t.Fatalf("a serves %d of 16 after c died", c[0])
	}
	t.Logf("failover after a crash: %s (lease %s)", time.Since(start), cTTL)
}

// A node that stops refreshing (paused) stops serving by its own clock
// before any other node can take the partition.
func TestPausedNodeStopsServingBeforeTheLeaseIsTaken(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	a := join(t, nc, testConfig("a"))
	id := ids(16)[0]
	if !a.t.Serves(id) {
		t.Fatal("a does not serve")
	}
	a.stop() // no more refreshes: as if paused
	// The moment a stops serving, nobody else may hold the key yet.
	for a.t.Serves(id) {
		time.Sleep(5 * time.Millisecond)
	}
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(t.Context(), DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(t.Context(), partitionKey(Partition(id, 16)))
	if err != nil || string(e.Value()) != "a" {
		t.Fatalf("when a stopped serving, the key was %v, %v: a must stop before the key can change hands", e, err)
	}
	b := join(t, nc, testConfig("b"))
	waitExclusive(t, 5*time.Second, b)
	if a.t.Serves(id) {
		t.Fatal("paused a serves again")
	}
}

func TestPartitionCountMustAgree(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	join(t, nc, testConfig("a"))
	js, _ := jetstream.New(nc)
	cfg := testConfig("b")
	cfg.Partitions = 32
	if _, err := New(t.Context(), js, cfg, Hooks{}); err == nil {
		t.Fatal("a node with another partition count joined")
	}
}

// TestLeaveDeletesALeaseRewrittenMeanwhile: a refresh written while the
// hand-over began moves the key's revision under the release (issue 18,
// finding 9: "deleting the lease failed; it ages out ... wrong last
// sequence", the partitions then unserved for a whole lease). Leave still
// deletes every key this node holds, so the next owner takes it at once.
func TestLeaveDeletesALeaseRewrittenMeanwhile(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	a := join(t, nc, testConfig("a"))
	a.stop() // no tick of its own from here on: the test plays the refresh
	ctx := t.Context()
	for p := range 16 {
		e, err := a.t.kv.Get(ctx, partitionKey(p))
		if err != nil {
			t.Fatal(err)
		}
		// The refresh in flight when Leave starts: same value, new revision.
		if _, err := a.t.kv.Update(ctx, partitionKey(p), e.Value(), e.Revision()); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.t.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for p := range 16 {
		if e, err := a.t.kv.Get(ctx, partitionKey(p)); err == nil {
			t.Errorf("partition %d: lease still held by %q after Leave (revision %d)", p, e.Value(), e.Revision())
		}
	}
}

// lateKV is the bucket as a node sees it while its lease rewrites are in
// flight: each Update is stored, but its answer waits for answer to close,
// and Get shows the key as it was before the rewrite (a replica behind the
// leader, or the rewrite not applied yet).
type lateKV struct {
	jetstream.KeyValue
	answer  chan struct{}
	written sync.WaitGroup
	mu      sync.Mutex
	before  map[string]jetstream.KeyValueEntry
}

func (k *lateKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if e, err := k.KeyValue.Get(ctx, key); err == nil {
		k.mu.Lock()
		k.before[key] = e
		k.mu.Unlock()
	}
	newRev, err := k.KeyValue.Update(ctx, key, value, rev)
	k.written.Done()
	<-k.answer
	return newRev, err
}

func (k *lateKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	k.mu.Lock()
	e, ok := k.before[key]
	k.mu.Unlock()
	if ok {
		return e, nil
	}
	return k.KeyValue.Get(ctx, key)
}

// TestLeaveWaitsForARefreshInFlight: the tick rewrote every lease just
// before Leave, and the answers come after the releases began; reading a
// key again still shows the revision before (on an R3 bucket a direct get
// may). The release deletes each key at the revision its rewrite's answer
// names, instead of giving up after three refused deletes (a rolling
// restart under -race left 15 leases to age out: "wrong last sequence").
func TestLeaveWaitsForARefreshInFlight(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	a := join(t, nc, testConfig("a"))
	a.stop() // no tick of its own from here on: the test plays the refreshes
	kv := a.t.kv
	late := &lateKV{KeyValue: kv, answer: make(chan struct{}), before: map[string]jetstream.KeyValueEntry{}}
	a.t.kv = late
	ctx := t.Context()
	var refreshes sync.WaitGroup
	for p := range 16 {
		a.t.mu.Lock()
		a.t.parts[p].refreshing = true // as the tick marks a refresh it sends
		a.t.mu.Unlock()
		late.written.Add(1)
		refreshes.Go(func() { a.t.refresh(ctx, p) })
	}
	late.written.Wait() // every rewrite is stored; no answer came yet
	left := make(chan error, 1)
	go func() { left <- a.t.Leave(ctx) }()
	time.Sleep(200 * time.Millisecond) // the releases begin
	close(late.answer)
	refreshes.Wait()
	if err := <-left; err != nil {
		t.Fatal(err)
	}
	for p := range 16 {
		if e, err := kv.Get(ctx, partitionKey(p)); err == nil {
			t.Errorf("partition %d: lease still held by %q after Leave (revision %d)", p, e.Value(), e.Revision())
		}
	}
}
