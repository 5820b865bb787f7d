package placement

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// tick expires, refreshes, claims and hands over leases. Run's goroutine only.
func (t *Table) tick(ctx context.Context) {
	now := time.Now()
	lost := t.bucketLost()
	t.noteLost(lost, now)
	t.mu.Lock()
	if !t.synced {
		t.mu.Unlock()
		return
	}
	live := t.liveLocked(now)
	var refresh, claim []int
	released := false
	for p := range t.parts {
		pp := &t.parts[p]
		if pp.releasing {
			continue
		}
		if pp.held && !now.Before(pp.until) && t.keepExpired(pp, now, lost) {
			if t.refreshDue(pp, now) {
				pp.refreshing = true
				refresh = append(refresh, p)
			}
			continue
		}
		if pp.held && !now.Before(pp.until) {
			pp.held = false
			t.metrics.lost.Inc()
			t.log.Warn("partition lease expired before it was refreshed", "partition", p)
			t.releaseAsync(p, false)
			t.changedLocked()
			continue
		}
		want := desired(p, live)
		switch {
		case pp.held && want != t.cfg.NodeID && !lost:
			// (Not while the bucket is lost: the key cannot be deleted,
			// nor created by the better owner.)
			t.releaseAsync(p, true) // no longer served from here on
			released = true
		case pp.held && t.refreshDue(pp, now):
			pp.refreshing = true
			refresh = append(refresh, p)
		case lost:
			// No claim can be written: none is tried until the bucket is back.
		case !pp.held && want == t.cfg.NodeID &&
			(pp.owner == "" || pp.owner == t.cfg.NodeID || now.Sub(pp.seen) > t.cfg.LeaseTTL):
			claim = append(claim, p)
		case !pp.held && !t.leaving && pp.owner == "" && !pp.freeAt.IsZero() && now.Sub(pp.freeAt) > t.cfg.LeaseTTL/2:
			// Free for half a lease and its best owner has not taken it:
			// the nodes' views of who is live differ for now (a slow
			// heartbeat). Any node takes it (the create is a
			// compare-and-set); the best owner gets it handed over later.
			claim = append(claim, p)
		}
	}
	if released {
		t.changedLocked()
	}
	t.mu.Unlock()

	if now.Sub(t.lastBeat) >= t.cfg.refreshEvery() {
		t.heartbeat(ctx)
	}
	// Each its own request, together: one slow write must not make the
	// others late (a lease lapses TTL−10% after it was written).
	var wg sync.WaitGroup
	for _, p := range refresh {
		wg.Go(func() { t.refresh(ctx, p) })
	}
	for _, p := range claim {
		wg.Go(func() { t.claim(ctx, p) })
	}
	wg.Wait()
	t.metrics.owned.Set(float64(t.held()))
}

// keepExpired reports whether a held lease past its expiry is kept: while
// the bucket is lost (served), or for QuorumWait after its expiry or the
// last tick that saw the bucket lost (held, not served: the node's probe
// may not have seen the bucket's quorum lost yet, or a refresh since it
// came back is yet to be answered). Caller holds mu.
func (t *Table) keepExpired(pp *part, now time.Time, lost bool) bool {
	if lost {
		return true
	}
	from := pp.until
	if t.lostSeen.After(from) {
		from = t.lostSeen
	}
	return now.Sub(from) < t.cfg.QuorumWait
}

// noteLost records that the bucket is lost (or not) at now, and logs when
// that changes. Run's goroutine only.
func (t *Table) noteLost(lost bool, now time.Time) {
	if lost {
		t.lostSeen = now
	}
	if lost == t.lost {
		return
	}
	t.lost = lost
	if lost {
		t.log.Warn("placement bucket without quorum: this node keeps serving the partitions it holds past their leases and claims none until it is back",
			"partitions", t.held())
		return
	}
	t.log.Info("placement bucket has its quorum again: leases are refreshed or dropped, free partitions claimed", "partitions", t.held())
}

func (t *Table) held() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for _, pp := range t.parts {
		if pp.held {
			n++
		}
	}
	return n
}

func (t *Table) heartbeat(ctx context.Context) {
	t.mu.RLock()
	leaving := t.leaving
	t.mu.RUnlock()
	if leaving {
		return
	}
	info := NodeInfo{ID: t.cfg.NodeID, Incarnation: t.inc, Partitions: t.cfg.Partitions,
		Started: t.started, Updated: time.Now()}
	if t.applied != nil {
		info.AppliedSeq = t.applied()
	}
	data, _ := json.Marshal(info)
	octx, cancel := context.WithTimeout(ctx, t.cfg.OpTimeout)
	defer cancel()
	if _, err := t.kv.Put(octx, nodeKey(t.cfg.NodeID), data); err != nil {
		if !t.bucketLost() {
			t.log.Warn("heartbeat failed", "err", err)
		}
		return
	}
	t.lastBeat = info.Updated
}

// claim takes partition p: creates its key when it is free, or rewrites it
// when it names this node (a previous run of this node, or a lease this
// node let expire while the key lived on). The key is read first: the
// watch's view may be behind.
func (t *Table) claim(ctx context.Context, p int) {
	t.mu.RLock()
	seen := t.parts[p].seen
	t.mu.RUnlock()
	start := time.Now()
	octx, cancel := context.WithTimeout(ctx, t.cfg.OpTimeout)
	defer cancel()
	var prev string
	var newRev uint64
	e, err := t.kv.Get(octx, partitionKey(p))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		newRev, err = t.kv.Create(octx, partitionKey(p), []byte(t.cfg.NodeID))
	case err != nil:
	case string(e.Value()) == t.cfg.NodeID:
		prev = t.cfg.NodeID
		newRev, err = t.kv.Update(octx, partitionKey(p), []byte(t.cfg.NodeID), e.Revision())
	default:
		return // another node's lease, not aged out yet
	}
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, jetstream.ErrKeyExists) && !isWrongSequence(err) {
			t.log.Warn("claim failed", "partition", p, "err", err)
		}
		return
	}
	t.mu.Lock()
	t.leasedLocked(&t.parts[p], newRev, start)
	t.changedLocked()
	t.mu.Unlock()
	how := "free"
	switch {
	case prev == t.cfg.NodeID:
		how = "own"
	case !seen.IsZero() && start.Sub(seen) > t.cfg.LeaseTTL:
		how = "expired"
	}
	t.metrics.acquired.WithLabelValues(how).Inc()
	t.log.Debug("partition acquired", "partition", p, "from", how)
}

// refresh rewrites a held lease (compare-and-set on its revision).
func (t *Table) refresh(ctx context.Context, p int) {
	t.mu.RLock()
	rev := t.parts[p].heldRev
	t.mu.RUnlock()
	start := time.Now()
	octx, cancel := context.WithTimeout(ctx, t.cfg.OpTimeout)
	defer cancel()
	newRev, err := t.kv.Update(octx, partitionKey(p), []byte(t.cfg.NodeID), rev)
	t.mu.Lock()
	defer t.mu.Unlock()
	pp := &t.parts[p]
	pp.refreshing = false
	if !pp.held || pp.heldRev != rev {
		return
	}
	if pp.releasing {
		if err == nil {
			// Written while a release began: the release deletes the key
			// at this revision.
			pp.heldRev = newRev
		}
		t.changedLocked() // the release waits for this answer
		return
	}
	if err != nil {
		if isWrongSequence(err) || errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			pp.held = false
			t.metrics.lost.Inc()
			t.log.Warn("partition lease lost: the key changed under this node", "partition", p, "err", err)
			t.releaseAsync(p, false)
			t.changedLocked()
			return
		}
		if !t.bucketLost() {
			t.log.Warn("lease refresh failed; retrying", "partition", p, "err", err, "valid_for", time.Until(pp.until))
		}
		return
	}
	t.leasedLocked(pp, newRev, start)
}

// refreshDue reports that a held lease was written refreshEvery ago or
// more (it was written at until − (TTL − margin)).
func (t *Table) refreshDue(pp *part, now time.Time) bool {
	return pp.until.Sub(now) <= t.cfg.LeaseTTL-t.cfg.margin()-t.cfg.refreshEvery()
}

// leasedLocked records a lease written at revision rev by a write that
// started at start: valid until start + TTL − margin. Caller holds mu.
func (t *Table) leasedLocked(pp *part, rev uint64, start time.Time) {
	pp.held, pp.heldRev, pp.until = true, rev, start.Add(t.cfg.LeaseTTL-t.cfg.margin())
	if pp.rev < rev {
		pp.owner, pp.rev, pp.seen = t.cfg.NodeID, rev, start
	}
}

// releaseAsync stops serving p: OnRelease, then (handover) the key is
// deleted so the next owner creates it at once. Caller holds mu (and has
// cleared held when the lease was lost). While it runs the partition is
// releasing: not served, not claimed again.
func (t *Table) releaseAsync(p int, handover bool) {
	t.parts[p].releasing = true
	t.releases.Add(1)
	go func() {
		defer t.releases.Done()
		if t.onRelease != nil {
			ctx, cancel := context.WithTimeout(context.Background(), t.cfg.ReleaseTimeout)
			t.onRelease(ctx, p)
			cancel()
		}
		if !handover {
			t.mu.Lock()
			t.parts[p].releasing = false
			t.changedLocked()
			t.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.OpTimeout)
		rev := t.settledRev(ctx, p)
		err := t.deleteOwn(ctx, p, rev)
		cancel()
		t.mu.Lock()
		t.parts[p].held, t.parts[p].releasing = false, false
		t.changedLocked()
		t.mu.Unlock()
		if err != nil {
			t.log.Warn("handover: deleting the lease failed; it ages out", "partition", p, "err", err)
			return
		}
		t.metrics.released.Inc()
	}()
}

// settledRev is the revision of this node's lease of p once no rewrite of
// it is in flight (or ctx ended). A rewrite sent as the release began moves
// the key's revision before its answer comes: a delete at the revision
// before it is refused, and reading the key again may show the old
// revision still (a replica behind, or the rewrite not yet applied), three
// times over (a rolling restart left 15 leases to age out so).
func (t *Table) settledRev(ctx context.Context, p int) uint64 {
	for {
		t.mu.RLock()
		rev, busy, ch := t.parts[p].heldRev, t.parts[p].refreshing, t.changed
		t.mu.RUnlock()
		if !busy || t.waitChanged(ctx, ch) != nil {
			return rev
		}
	}
}

// deleteOwn deletes partition p's key if it still names this node: at
// revision rev, or, when the key moved since (a refresh written while the
// release began, whose revision this node did not record), at the revision
// read again, a few times. A key that names another node or is gone is
// left alone (nil).
func (t *Table) deleteOwn(ctx context.Context, p int, rev uint64) error {
	var err error
	for range 3 {
		if err = t.kv.Delete(ctx, partitionKey(p), jetstream.LastRevision(rev)); err == nil || !isWrongSequence(err) {
			return err
		}
		e, gerr := t.kv.Get(ctx, partitionKey(p))
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound) || errors.Is(gerr, jetstream.ErrKeyDeleted):
			return nil
		case gerr != nil:
			return errors.Join(err, gerr)
		case string(e.Value()) != t.cfg.NodeID:
			return nil // taken by another node already
		}
		rev = e.Revision()
	}
	return err
}

// isWrongSequence reports a compare-and-set refused by the server (JetStream
// error 10071: wrong last sequence).
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// Ready returns once this node holds every partition it should (those
// whose key was free or its own), or ctx ends.
func (t *Table) Ready(ctx context.Context) error {
	for {
		now := time.Now()
		t.mu.RLock()
		ready, ch := t.synced, t.changed
		if ready {
			live := t.liveLocked(now)
			for p, pp := range t.parts {
				if desired(p, live) == t.cfg.NodeID && !pp.held &&
					(pp.owner == "" || pp.owner == t.cfg.NodeID) {
					ready = false
					break
				}
			}
		}
		t.mu.RUnlock()
		if ready {
			return nil
		}
		if err := t.waitChanged(ctx, ch); err != nil {
			return err
		}
	}
}

// Leave hands every partition over (SIGTERM): the heartbeat is deleted so
// the other nodes stop counting this one, then each held partition is
// released (OnRelease, then its key deleted). It returns when all are
// released or ctx ends (the rest then age out).
func (t *Table) Leave(ctx context.Context) error {
	t.mu.Lock()
	t.leaving = true
	var ps []int
	for p := range t.parts {
		if pp := &t.parts[p]; pp.held && !pp.releasing {
			pp.releasing = true
			ps = append(ps, p)
		}
	}
	t.changedLocked()
	t.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, t.cfg.OpTimeout)
	err := t.kv.Delete(dctx, nodeKey(t.cfg.NodeID))
	cancel()
	if err != nil {
		t.log.Warn("leave: deleting the heartbeat failed; it ages out", "err", err)
	}
	t.mu.Lock()
	for _, p := range ps {
		t.releaseAsync(p, true)
	}
	t.mu.Unlock()
	// Not a WaitGroup: the tick may start a release (a lost lease) while
	// this waits. Every release ends with changedLocked.
	for {
		t.mu.RLock()
		busy := slices.ContainsFunc(ps, func(p int) bool { return t.parts[p].releasing })
		ch := t.changed
		t.mu.RUnlock()
		if !busy {
			t.log.Info("partitions handed over", "partitions", len(ps))
			return nil
		}
		if err := t.waitChanged(ctx, ch); err != nil {
			return err
		}
	}
}
