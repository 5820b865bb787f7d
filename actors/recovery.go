package actors

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var deterministic = proto.MarshalOptions{Deterministic: true}

func (a *sessionActor) snapshotKey() string { return "session." + a.id }

// ensureRecovered loads the state on first use (and after a restart).
func (a *sessionActor) ensureRecovered() error {
	if a.state != nil {
		return nil
	}
	return a.reload()
}

// reload rebuilds the state from the latest snapshot and the log tail after
// it, up to the last sequence the stream leader reports.
func (a *sessionActor) reload() error {
	deps := a.dir.deps
	ctx, cancel := context.WithTimeout(context.Background(), a.dir.cfg.StoreTimeout)
	defer cancel()
	if err := a.dir.acquireRecovery(ctx); err != nil {
		return err
	}
	defer a.dir.releaseRecovery()
	start := time.Now()

	state := segmented.New()
	data, found, err := deps.Snapshots.Get(ctx, a.snapshotKey())
	if err != nil {
		deps.Metrics.StoreFailures.Inc()
		return fmt.Errorf("%w: load snapshot of session %s: %v", ErrUnavailable, a.id, err)
	}
	if found {
		snap := &memoryv1.SessionSnapshot{}
		if err := proto.Unmarshal(data, snap); err != nil {
			// A snapshot is only a cache of the log: ignore a bad one loudly.
			deps.Logger.Warn("ignoring undecodable snapshot", "session", a.id, "err", err)
		} else {
			state = segmented.FromSnapshot(snap)
		}
	}
	snapVersion := state.Version()
	if _, err := deps.Log.Load(ctx, a.subject, state.LastSeq(), func(rec eventsRecord) error {
		return replayRecord(deps.Codec, state, rec)
	}); err != nil {
		deps.Metrics.StoreFailures.Inc()
		return fmt.Errorf("%w: load log of session %s: %v", ErrUnavailable, a.id, err)
	}
	a.state = state
	a.snapVersion = snapVersion
	deps.Metrics.Recoveries.Inc()
	deps.Metrics.RecoveryLatency.Observe(time.Since(start).Seconds())
	return nil
}

// snapshot writes the state if enough batches passed since the last one (or
// any did, when force is set). A failed snapshot loses nothing: the log has
// every event; it is logged and counted.
func (a *sessionActor) snapshot(force bool) {
	if a.state == nil || !a.state.Exists() {
		return
	}
	v := a.state.Version()
	if v == a.snapVersion || (!force && v-a.snapVersion < a.dir.cfg.SnapshotEvery) {
		return
	}
	deps := a.dir.deps
	data, err := deterministic.Marshal(a.state.Snapshot())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), a.dir.cfg.StoreTimeout)
		err = deps.Snapshots.Put(ctx, a.snapshotKey(), data)
		cancel()
	}
	if err != nil {
		deps.Metrics.SnapshotErrors.Inc()
		deps.Logger.Warn("snapshot failed", "session", a.id, "version", v, "err", err)
		return
	}
	a.snapVersion = v
	deps.Metrics.Snapshots.Inc()
}
