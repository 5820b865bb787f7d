package projections

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// RebuildPartitions is Rebuild for a log in k > 1 partitions
// (events.PartitionedLog): each partition stream is checked as Rebuild
// checks the one stream (its own removal ledger) and replayed in turn into
// one new file, with its own checkpoint, written aside and renamed over
// path. progress counts over all partitions. WithUpTo is refused: a
// sequence names no partition (WithUpToPartitions names one per
// partition). The partitions are applied one after the other, not in the
// order a live projector interleaves them; searches and digests do not
// depend on that order (search_age.go, digest.go). They go through one
// pipeline (rebuildFrom): the next partition is read, decoded and grouped
// while the writer commits the last transaction of the one before.
func RebuildPartitions(ctx context.Context, js jetstream.JetStream, stream string, k int, path string, codec *events.Codec,
	progress func(applied, total uint64), opts ...RebuildOption) (RebuildStats, error) {
	began := time.Now()
	var stats RebuildStats
	if k < 2 || k > events.MaxLogPartitions {
		return stats, fmt.Errorf("%w: partitions %d: 2..%d", ErrInvalidConfig, k, events.MaxLogPartitions)
	}
	o := rebuildOptions{idle: DefaultIdleTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.upTo != nil {
		return stats, fmt.Errorf("%w: WithUpTo names no partition (WithUpToPartitions)", ErrInvalidConfig)
	}
	if o.upToParts != nil && len(o.upToParts) != k {
		return stats, fmt.Errorf("%w: WithUpToPartitions: %d sequences for %d partitions", ErrInvalidConfig, len(o.upToParts), k)
	}
	cfg := events.DefaultJetStreamConfig()
	cfg.Stream = stream
	plog, err := events.OpenPartitionedLog(js, cfg, k)
	if err != nil {
		return stats, fmt.Errorf("projections: rebuild: %w", err)
	}
	type part struct {
		last    uint64
		removed *events.SpanSet
	}
	parts := make([]part, k)
	for i := range k {
		if parts[i].last, parts[i].removed, err = checkLog(ctx, plog.Partition(i), plog.Streams()[i]); err != nil {
			return stats, err
		}
		if o.upToParts != nil {
			parts[i].last = min(parts[i].last, o.upToParts[i])
		}
	}
	tmp := path + ".rebuild"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return stats, fmt.Errorf("projections: rebuild: remove leftover %s: %w", tmp, err)
	}
	st, err := openStore(tmp, true)
	if err != nil {
		return stats, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = st.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := st.SetLogPartitions(k); err != nil {
		return stats, err
	}
	var srcs []rebuildSource
	for i, p := range parts {
		if p.last > 0 {
			srcs = append(srcs, rebuildSource{r: plog.Partition(i), part: i, stream: plog.Streams()[i], last: p.last, removed: p.removed})
		}
	}
	if len(srcs) > 0 {
		if err := rebuildFrom(ctx, srcs, codec, st, o.idle, &stats, progress); err != nil {
			return stats, fmt.Errorf("projections: rebuild %s: %w", path, err)
		}
	}
	stats.LastSeq = st.AppliedSeq() // partition 0's
	ok, err = commitRebuild(st, tmp, path)
	if err != nil {
		return stats, err
	}
	stats.Duration = time.Since(began)
	return stats, nil
}
