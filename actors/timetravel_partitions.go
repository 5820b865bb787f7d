package actors

import (
	"context"
	"slices"
	"sort"

	"github.com/agentmem/agentmem/events"
)

// LedgerStreams is the removal ledger of a log in K > 1 partitions, for
// time travel (ContextAt): each stream's reader, and the stream holding a
// subject. Each removal is in the stream of the aggregate it removes, so
// the ledger of a session's context (the scopes and sessions it recalled)
// is in every stream.
type LedgerStreams interface {
	LedgerStreams() []events.StreamReader
	PartitionOf(subject string) (int, error)
}

// partitionLedger reads the ledger of every stream of ls for the
// time travel of the session whose subject is subject, rebuilt from the
// batches stored. A removal of the session's own stream keeps its
// sequence (that stream read from from on); one of another stream (read
// whole: from names a sequence of the session's stream) is placed at the
// first of the session's batches stored at or after it, or after the
// last one: it is then at or before a point exactly when the stream
// stored it no later than the point's batch. The removals come back in
// the order of the session's stream.
func partitionLedger(ls LedgerStreams, subject string, stored []storedAt) ledgerFunc {
	return func(ctx context.Context, from uint64) ([]*events.Removal, error) {
		own, err := ls.PartitionOf(subject)
		if err != nil {
			return nil, err
		}
		var out []*events.Removal
		for i, r := range ls.LedgerStreams() {
			start := uint64(1)
			if i == own {
				start = from
			}
			led, err := events.ReadLedgerFrom(ctx, r, start, 0)
			if err != nil {
				return nil, err
			}
			for _, rm := range led.Removals {
				if i != own {
					rm.Seq = placeAt(stored, rm)
				}
				out = append(out, rm)
			}
		}
		sort.SliceStable(out, func(a, b int) bool { return out[a].Seq < out[b].Seq })
		return out, nil
	}
}

// placeAt is the sequence of the first batch of stored (in stream order)
// stored at or after rm, or one past the last.
func placeAt(stored []storedAt, rm *events.Removal) uint64 {
	i, _ := slices.BinarySearchFunc(stored, rm, func(s storedAt, rm *events.Removal) int {
		if s.at.Before(rm.Time) {
			return -1
		}
		return 1
	})
	if i < len(stored) {
		return stored[i].seq
	}
	if len(stored) == 0 {
		return 1
	}
	return stored[len(stored)-1].seq + 1
}
