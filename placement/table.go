package placement

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoOwner is returned (wrapped) by Owner when no node serves the
// aggregate's partition before the context ends (a node died and its lease
// has not expired yet, or the cluster has no live node).
var ErrNoOwner = errors.New("placement: no node serves the partition")

// ErrPartitions is returned (wrapped) by New when a live node of the
// cluster uses another partition count.
var ErrPartitions = errors.New("placement: partition count differs from the cluster's")

// NodeInfo is a node's heartbeat (the value of n.<id>).
type NodeInfo struct {
	ID          string    `json:"id"`
	Incarnation string    `json:"incarnation"`
	Partitions  int       `json:"partitions"`
	AppliedSeq  uint64    `json:"applied_seq"`
	Started     time.Time `json:"started"`
	Updated     time.Time `json:"updated"`
}

// part is one partition as this node sees it.
type part struct {
	// The watch's view of the key.
	owner  string
	rev    uint64
	seen   time.Time // local time the key was last written
	freeAt time.Time // local time the key was seen gone (zero: present)
	// This node's lease, when held.
	held      bool
	releasing bool
	// refreshing: a rewrite of the lease is in flight (its answer moves
	// heldRev).
	refreshing bool
	heldRev    uint64
	until      time.Time // the lease is valid before this (local clock)
}

// Table is this node's view of the placement and its own leases.
type Table struct {
	cfg       Config
	kv        jetstream.KeyValue
	log       *slog.Logger
	metrics   *metrics
	onRelease func(ctx context.Context, partition int)
	applied   func() uint64
	lostHook  func() bool
	inc       string
	started   time.Time
	kick      chan struct{}
	releases  sync.WaitGroup

	mu       sync.RWMutex
	parts    []part               // guarded by mu
	nodes    map[string]time.Time // node id → local time its heartbeat was last seen; guarded by mu
	leaving  bool                 // guarded by mu
	changed  chan struct{}        // closed on every change; guarded by mu
	synced   bool                 // the watch delivered the bucket's contents; guarded by mu
	lastBeat time.Time            // tick goroutine only
	// lostSeen is the last tick that saw the bucket without quorum; lost
	// whether the last tick did (tick goroutine only).
	lostSeen time.Time
	lost     bool
}

// Hooks are what the node does when placement changes.
type Hooks struct {
	// OnRelease is called when this node stops serving a partition (handed
	// over, or its lease lost), before another node may take it when it is
	// handed over: the node stops the partition's actors. It must return
	// within its context.
	OnRelease func(ctx context.Context, partition int)
	// Applied reports the projection's applied stream sequence, published
	// in the heartbeat (nil: 0).
	Applied func() uint64
	// BucketLost reports that the bucket has no quorum now (the node's
	// probe of its stream; nil: never). No node can write a lease then:
	// none can take a partition from this one, so this node keeps serving
	// the partitions it holds past their leases' expiry, claims none, and
	// Owner names the last owner it saw of the others (or fails at once)
	// instead of waiting for one. The log's expected-last-subject-sequence
	// check fences the appends of an owner that lost its lease meanwhile.
	BucketLost func() bool
}

// ErrBucketLost is returned (wrapped, with ErrNoOwner) by Owner when no
// node serves the partition and the bucket has no quorum (Hooks.BucketLost):
// none can take it until the bucket is back.
var ErrBucketLost = errors.New("placement: the placement bucket has no quorum")

// New creates (or opens) the placement bucket and returns this node's
// table; Run serves it. It refuses a cluster whose live nodes use another
// partition count.
func New(ctx context.Context, js jetstream.JetStream, cfg Config, hooks Hooks) (*Table, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	kv, err := openBucket(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	t := &Table{cfg: cfg, kv: kv, log: cfg.Logger.With("component", "placement", "node_id", cfg.NodeID),
		onRelease: hooks.OnRelease, applied: hooks.Applied, lostHook: hooks.BucketLost,
		inc: hex.EncodeToString(b[:]), started: time.Now(), kick: make(chan struct{}, 1),
		parts: make([]part, cfg.Partitions), nodes: map[string]time.Time{}, changed: make(chan struct{})}
	if err := t.checkPeers(ctx); err != nil {
		return nil, err
	}
	// Registered last: a New that failed (a cluster still electing its
	// leader) registered nothing, and can be called again.
	t.metrics = newMetrics(cfg.Registerer)
	return t, nil
}

// openBucket creates the bucket with delete markers for aged-out keys
// (nats-server ≥ 2.11), or without them on an older server.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	kcfg := jetstream.KeyValueConfig{
		Bucket: cfg.Bucket, Description: "agentmem placement: partition leases and node heartbeats",
		History: 1, TTL: cfg.LeaseTTL, Storage: jetstream.FileStorage, Replicas: max(cfg.Replicas, 1),
		LimitMarkerTTL: cfg.LeaseTTL,
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, kcfg)
	// Only a server that answered, refusing the markers, is asked again
	// without them: a request that timed out (a cluster still electing)
	// may have created the bucket with them, which then cannot drop them.
	var refused *jetstream.APIError
	if err != nil && errors.As(err, &refused) && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		kcfg.LimitMarkerTTL = 0
		kv, err = js.CreateOrUpdateKeyValue(ctx, kcfg)
	}
	if err != nil {
		return nil, fmt.Errorf("placement: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// checkPeers refuses a cluster whose live nodes use another partition count.
func (t *Table) checkPeers(ctx context.Context) error {
	nodes, _, err := readBucket(ctx, t.kv, false)
	if err != nil {
		return err
	}
	for _, info := range nodes {
		if info.Partitions != t.cfg.Partitions && info.ID != t.cfg.NodeID {
			return fmt.Errorf("%w: node %s uses %d partitions, this node %d (--partitions must be equal on every node)",
				ErrPartitions, info.ID, info.Partitions, t.cfg.Partitions)
		}
	}
	return nil
}

// NodeID is this node's id.
func (t *Table) NodeID() string { return t.cfg.NodeID }

// Serves reports whether this node serves aggregate id now: it holds the
// partition's lease, the lease is valid by its clock (or the bucket has
// no quorum: Hooks.BucketLost), and it is not handing the partition over.
func (t *Table) Serves(id string) bool {
	p := Partition(id, t.cfg.Partitions)
	now := time.Now()
	lost := t.bucketLost()
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.servesLocked(&t.parts[p], now, lost)
}

// servesLocked is Serves of partition pp at now, the bucket lost or not.
// Caller holds mu.
func (t *Table) servesLocked(pp *part, now time.Time, lost bool) bool {
	return pp.held && !pp.releasing && (now.Before(pp.until) || lost)
}

// Served is how many partitions this node serves now.
func (t *Table) Served() int {
	now := time.Now()
	lost := t.bucketLost()
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for p := range t.parts {
		if t.servesLocked(&t.parts[p], now, lost) {
			n++
		}
	}
	return n
}

// bucketLost is Hooks.BucketLost (false without one).
func (t *Table) bucketLost() bool { return t.lostHook != nil && t.lostHook() }

// Holds reports whether this node holds the lease of aggregate id's
// partition and is not handing it over. Unlike Serves it ignores the
// lease's age: a lease this node is late renewing is still its own until
// another node takes it.
func (t *Table) Holds(id string) bool {
	p := Partition(id, t.cfg.Partitions)
	t.mu.RLock()
	defer t.mu.RUnlock()
	pp := &t.parts[p]
	return pp.held && !pp.releasing
}

// Owner returns the node that serves aggregate id (local: this node),
// waiting until ctx ends while the partition has no live owner or is being
// handed over. While the bucket has no quorum (Hooks.BucketLost) it names
// the last owner seen however long ago it wrote its lease (that owner
// keeps serving it), and fails at once (ErrBucketLost) when there is none.
func (t *Table) Owner(ctx context.Context, id string) (node string, local bool, err error) {
	p := Partition(id, t.cfg.Partitions)
	for {
		now := time.Now()
		lost := t.bucketLost()
		t.mu.RLock()
		pp, ch := t.parts[p], t.changed
		alone := t.leaving && len(t.liveLocked(now)) == 0
		serves := t.servesLocked(&pp, now, lost)
		t.mu.RUnlock()
		switch {
		case serves:
			return t.cfg.NodeID, true, nil
		case pp.owner != "" && pp.owner != t.cfg.NodeID && (lost || now.Sub(pp.seen) <= t.cfg.LeaseTTL):
			return pp.owner, false, nil
		case alone:
			return "", false, fmt.Errorf("%w: this node is stopping and no other node is live", ErrNoOwner)
		case lost:
			return "", false, fmt.Errorf("%w: partition %d of %q: %w: no node can take it until the bucket is back", ErrNoOwner, p, id, ErrBucketLost)
		}
		if err := t.waitChanged(ctx, ch); err != nil {
			return "", false, fmt.Errorf("%w: partition %d of %q: %v", ErrNoOwner, p, id, err)
		}
	}
}

// changedLocked wakes everyone waiting in waitChanged. Caller holds mu.
func (t *Table) changedLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// waitChanged returns when ch (t.changed, read under mu with what the
// caller checked) is closed or a tick passed, or with ctx's error.
func (t *Table) waitChanged(ctx context.Context, ch <-chan struct{}) error {
	timer := time.NewTimer(t.cfg.Tick)
	defer timer.Stop()
	select {
	case <-ch:
		return nil
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Table) wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Run watches the bucket and keeps this node's leases until ctx ends.
func (t *Table) Run(ctx context.Context) error {
	ticker := time.NewTicker(t.cfg.Tick)
	defer ticker.Stop()
	defer t.releases.Wait()
	for ctx.Err() == nil {
		if err := t.watch(ctx, ticker.C); err != nil {
			t.log.Warn("placement watch restarts", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(t.cfg.Tick):
			}
		}
	}
	return nil
}

// watch runs one watch of the bucket (and the ticks) until ctx ends or the
// watch goes quiet: this node rewrites its heartbeat every TTL/3, so a
// watch that delivered nothing for a TTL while heartbeats were written
// lost its consumer (its server died, a leader moved); it is then made
// anew from the bucket's contents.
func (t *Table) watch(ctx context.Context, tick <-chan time.Time) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := t.kv.WatchAll(wctx)
	if err != nil {
		return fmt.Errorf("placement: watch %s: %w", t.cfg.Bucket, err)
	}
	defer func() { _ = w.Stop() }()
	t.resync()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("placement: watch of %s ended", t.cfg.Bucket)
			}
			last = time.Now()
			t.observe(e)
		case <-t.kick:
			t.tick(ctx)
		case <-tick:
			t.tick(ctx)
			if quiet := time.Since(last); quiet > t.cfg.LeaseTTL && t.lastBeat.After(last) {
				return fmt.Errorf("placement: watch of %s delivered nothing for %s", t.cfg.Bucket, quiet.Round(time.Millisecond))
			}
		}
	}
}

// resync forgets what the watch told (a new watch delivers the bucket's
// contents again); this node's own leases are kept.
func (t *Table) resync() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.synced = false
	for p := range t.parts {
		if pp := &t.parts[p]; !pp.held {
			pp.owner, pp.rev, pp.freeAt = "", 0, time.Now() // present keys are delivered again
		}
	}
	clear(t.nodes)
	t.changedLocked()
}

// observe applies one watch update (nil: the bucket's contents were all
// delivered).
func (t *Table) observe(e jetstream.KeyValueEntry) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.changedLocked()
	if e == nil {
		t.synced = true
		t.wake()
		return
	}
	gone := e.Operation() != jetstream.KeyValuePut
	switch p, id := parseKey(e.Key()); {
	case p >= 0:
		if p >= len(t.parts) {
			return
		}
		pp := &t.parts[p]
		if e.Revision() <= pp.rev {
			return // older than what this node wrote and already knows
		}
		pp.rev = e.Revision()
		if gone {
			// seen stays the owner's last write: a claim tells a failover
			// (aged out) from a handover.
			pp.owner, pp.freeAt = "", now
			t.wake() // a handed-over or aged-out partition: claim it now
		} else {
			pp.owner, pp.seen, pp.freeAt = string(e.Value()), now, time.Time{}
		}
		if pp.held && !pp.releasing && (gone || pp.owner != t.cfg.NodeID) {
			// The key aged out or another node wrote it: our lease is over.
			pp.held = false
			t.metrics.lost.Inc()
			t.log.Warn("partition lease lost", "partition", p, "owner", pp.owner)
			t.releaseAsync(p, false)
		}
	case id != "":
		if gone {
			delete(t.nodes, id)
			t.wake()
			return
		}
		var info NodeInfo
		if json.Unmarshal(e.Value(), &info) != nil {
			return
		}
		if _, known := t.nodes[id]; !known {
			t.wake() // a node joined: rebalance
		}
		if id == t.cfg.NodeID && info.Incarnation != t.inc && now.Sub(t.started) > t.cfg.LeaseTTL {
			t.log.Error("another process heartbeats with this node id: node ids must be unique", "incarnation", info.Incarnation)
		}
		t.nodes[id] = now
	}
}

// Alone reports that no other node is live: nobody could serve what
// reaches this node.
func (t *Table) Alone() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	live := t.liveLocked(time.Now())
	return len(live) == 0 || (len(live) == 1 && live[0] == t.cfg.NodeID)
}

// LiveNodes lists, sorted, the nodes that take partitions: this one
// (unless leaving) and every node whose heartbeat was seen within a TTL.
func (t *Table) LiveNodes() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.liveLocked(time.Now())
}

// liveLocked is the nodes that take partitions: this one (unless leaving)
// and every node whose heartbeat was seen within a TTL. Caller holds mu.
func (t *Table) liveLocked(now time.Time) []string {
	var live []string
	if !t.leaving {
		live = append(live, t.cfg.NodeID)
	}
	for id, seen := range t.nodes {
		if id != t.cfg.NodeID && now.Sub(seen) <= t.cfg.LeaseTTL {
			live = append(live, id)
		}
	}
	slices.Sort(live)
	return live
}
