package consistency

import (
	"context"
	"fmt"
	"time"
)

// Projection is what a wait for a Set needs of a projection of a log in
// partitions (the node's read model).
type Projection interface {
	// AppliedSeqOf is partition part's checkpoint.
	AppliedSeqOf(part int) uint64
	// WaitForAll returns once each partition i applied targets[i], or an
	// error when ctx ends first.
	WaitForAll(ctx context.Context, targets []uint64) error
	// LogEndOf is at least the last sequence partition part's stream
	// stored; seq is the sequence asked (a node that knows the stream
	// holds it need not ask the stream).
	LogEndOf(ctx context.Context, part int, seq uint64) (uint64, error)
}

// Wait returns once p applied each partition's sequence of set, waiting at
// most bound. A sequence beyond its stream's last is no write's (a reply's
// token names a stored write): a 400 at once. A wait that ends first is a
// 503 naming the partition behind. p nil (a node without a projection of
// partitions) is a 503.
func Wait(ctx context.Context, p Projection, set Set, bound time.Duration) error {
	if p == nil {
		return &Error{Code: 503, Kind: ErrLate, Reason: "no projection of the log's partitions on this node"}
	}
	pending := false
	for i, seq := range set.Seqs {
		if seq == 0 || p.AppliedSeqOf(i) >= seq {
			continue
		}
		pending = true
		if end, err := p.LogEndOf(ctx, i, seq); err == nil && seq > end {
			return refuse(ErrBeyond, "%s is beyond partition %d's last sequence (%d): pass the result.consistency of a reply", Format(set.K, i, seq), i, end)
		}
	}
	if !pending {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	err := p.WaitForAll(wctx, set.Seqs)
	if err == nil {
		return nil
	}
	for i, seq := range set.Seqs {
		if applied := p.AppliedSeqOf(i); applied < seq {
			return &Error{Code: 503, Kind: ErrLate, Reason: fmt.Sprintf("partition %d has applied %d, not yet %d (waited %s); retry", i, applied, seq, bound)}
		}
	}
	return nil // every partition caught up as the wait ended
}
