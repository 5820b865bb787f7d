package projections

import (
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
)

// A projection of a log in K > 1 partitions (events.PartitionedLog) keeps
// one checkpoint per partition stream, each written in the transaction of
// the effects it covers: meta "checkpoint" is partition 0's (so a
// projection of the one stream of today's layout is unchanged), and
// "checkpoint.p<i>" partition i's. Meta "log_partitions" records K (absent:
// 1).

// ErrLogPartitions is returned (wrapped) when a projection file was made
// from a log in another number of partitions: rebuild it.
var ErrLogPartitions = errors.New("projections: the projection was made from a log in another number of partitions (rebuild it: replay rebuild)")

var metaLogPartitions = []byte("log_partitions")

// checkpointKey is the meta key of partition part's checkpoint.
func checkpointKey(part int) []byte {
	if part == 0 {
		return metaCheckpoint
	}
	return []byte("checkpoint.p" + strconv.Itoa(part))
}

// loadPartitions reads the partition count and the checkpoints of
// partitions 1.. into s (open).
func (s *Store) loadPartitions(tx *bolt.Tx) {
	meta := tx.Bucket(bucketMeta)
	k := int(getU64(meta, metaLogPartitions))
	s.logPartitions.Store(int64(max(k, 1)))
	for i := 1; i < min(k, events.MaxLogPartitions); i++ {
		s.partApplied[i].Store(getU64(meta, checkpointKey(i)))
	}
}

// LogPartitions is the number of log partitions the projection was made
// from (1 for a file of today's layout or a new file).
func (s *Store) LogPartitions() int { return int(s.logPartitions.Load()) }

// AppliedSeqOf is partition part's checkpoint: the last sequence of that
// partition's stream whose effects are committed. Partition 0's is
// AppliedSeq.
func (s *Store) AppliedSeqOf(part int) uint64 {
	if part == 0 {
		return s.applied.Load()
	}
	return s.partApplied[part].Load()
}

// SetLogPartitions records that the projection is made from a log in k
// partitions, refusing (ErrLogPartitions) a file made from another k: one
// recording another k, or for k > 1 a file of the one stream that applied
// something already. k = 1 writes nothing.
func (s *Store) SetLogPartitions(k int) error {
	if err := events.ValidatePartitions("log partitions", k); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		have := max(int(getU64(meta, metaLogPartitions)), 1)
		switch {
		case have == k:
			return nil
		case have > 1:
			return fmt.Errorf("%w: %s records %d partitions, the log has %d", ErrLogPartitions, s.path, have, k)
		case getU64(meta, metaCheckpoint) > 0:
			return fmt.Errorf("%w: %s was made from the log in one stream (checkpoint %d), the log has %d partitions", ErrLogPartitions, s.path, getU64(meta, metaCheckpoint), k)
		}
		if err := meta.Put(metaLogPartitions, u64(uint64(k))); err != nil {
			return err
		}
		s.logPartitions.Store(int64(k))
		return nil
	})
}
