package erasure

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Resumed is what one Resume pass did.
type Resumed struct {
	// Removals is how many pending removals it finished.
	Removals int
	// Last is the last ledger sequence a finished removal wrote (0: none).
	Last uint64
	// Next is where the next pass reads the ledger from: past what this
	// pass read when it finished every pending removal, else from (the
	// same ones again).
	Next uint64
}

// Resume finishes the removals of the ledger, recorded from sequence from
// on, that have no completion (a crash in the middle; a removal in
// progress elsewhere looks pending too, and is done twice harmlessly: its
// actor serves the second request after the first, which finds it
// completed). In log order:
//
//   - a plan (an erase request, LogRemoval.planned) is finished as Erase
//     finishes it: each item removed again (a no-op when it went), then the
//     plan's completion;
//   - a removal of its own (a plan's item whose plan is complete, or a
//     compaction) goes again to the actor of each aggregate it names, which
//     finds its LogRemoval and completes it without recording a second one.
//
// Then it waits until the read model applied what it wrote. The node runs
// it before it serves, and every so often after (an owner unreachable at
// start).
func (c *Coordinator) Resume(ctx context.Context, from uint64) (Resumed, error) {
	res, err := c.resumeStream(ctx, c.deps.Reader, c.deps.Log, from, false)
	if err != nil {
		return res, err
	}
	return res, c.waitResumed(ctx, res.Last)
}

// ResumePartitions is Resume for the log in partitions (Deps.Streams):
// each stream's ledger read from its own from[i] (missing: 1), its
// pending removals finished, then the read model waited for. The i-th
// Resumed is stream i's; on an error the streams after the failing one
// keep their from. A plan's items may be in other streams than the plan,
// before it in the order of the streams: the pending plans of every
// stream are finished first (which finishes their items), then the
// removals of their own.
func (c *Coordinator) ResumePartitions(ctx context.Context, from []uint64) ([]Resumed, error) {
	out := make([]Resumed, len(c.deps.Streams))
	for i := range out {
		if i < len(from) {
			out[i].Next = from[i]
		}
	}
	var last uint64
	for _, plans := range []bool{true, false} {
		for i, st := range c.deps.Streams {
			res, err := c.resumeStream(ctx, st, st, out[i].Next, plans)
			if plans {
				res.Next = out[i].Next // read again for the removals of their own
			}
			res.Removals += out[i].Removals
			out[i] = res
			if err != nil {
				return out, fmt.Errorf("partition %d: %w", i, err)
			}
			last = max(last, res.Last)
		}
	}
	return out, c.waitResumed(ctx, last)
}

// waitResumed waits until the read model applied what a pass wrote, up
// to last (0: nothing written).
func (c *Coordinator) waitResumed(ctx context.Context, last uint64) error {
	if rm := c.deps.ReadModel; rm != nil && last > 0 {
		if err := rm.WaitFor(ctx, last); err != nil {
			return fmt.Errorf("%w: the read model has not applied the resumed removals (up to %d): %w", ErrUnavailable, last, err)
		}
	}
	return nil
}

// resumeStream finishes the pending removals of the ledger r holds (from
// sequence from on; plans: only the plans), loading each removal's
// records from ledger (the stream r reads).
func (c *Coordinator) resumeStream(ctx context.Context, r events.StreamReader, ledger events.Log, from uint64, plans bool) (Resumed, error) {
	res := Resumed{Next: from}
	led, err := events.ReadLedgerFrom(ctx, r, from, 0)
	if err != nil {
		return res, fmt.Errorf("%w: read the removal ledger: %w", ErrUnavailable, err)
	}
	for _, rm := range led.Pending() {
		rec, err := events.LoadRemoval(ctx, ledger, rm.GetId())
		if err != nil {
			return res, fmt.Errorf("%w: read removal %s: %w", ErrUnavailable, rm.GetId(), err)
		}
		if rec.DoneSeq > 0 {
			continue // a plan's item, finished by its plan above
		}
		if plans && len(rm.GetPlanned()) == 0 {
			continue
		}
		if len(rm.GetPlanned()) > 0 {
			rc, err := c.finish(ctx, rm.LogRemoval, nil, rec, true)
			if err != nil {
				return res, fmt.Errorf("erasure: resume erase %s (%s): %w", rm.GetId(), rm.GetTarget(), err)
			}
			res.Removals, res.Last = res.Removals+1, max(res.Last, rc.GetRemovalSeq())
			continue
		}
		if err := c.resumeOne(ctx, rm.LogRemoval); err != nil {
			return res, fmt.Errorf("erasure: resume removal %s (%s): %w", rm.GetId(), rm.GetTarget(), err)
		}
		if rec, err = events.LoadRemoval(ctx, ledger, rm.GetId()); err == nil {
			res.Last = max(res.Last, rec.DoneSeq)
		}
		res.Removals++
	}
	res.Next = led.Last + 1
	return res, nil
}

// resumeOne sends removal rm again to the actor (or store) of each
// aggregate it names.
func (c *Coordinator) resumeOne(ctx context.Context, rm *memoryv1.LogRemoval) error {
	aggs := rm.GetErased()
	var body any = &memoryv1.EraseAggregate{RemovalId: rm.GetId(), Reason: rm.GetReason(), Target: rm.GetTarget(),
		RequestedBy: rm.GetRequestedBy(), Why: rm.GetWhy()}
	switch {
	case rm.GetReason() == memoryv1.RemovalReason_REMOVAL_REASON_COMPACT:
		// Its actor resumes it, the baseline untrimmed if not written yet.
		body, aggs = &memoryv1.CompactAggregate{RemovalId: rm.GetId()}, rm.GetRewritten()
	case len(rm.GetRewritten()) > 0:
		// An entry erase is always a plan's item: its plan resumes it with
		// its key.
		return fmt.Errorf("the rewrite of %v is an erase plan's item, resumed by its plan", rm.GetRewritten())
	}
	for _, agg := range aggs {
		it, err := ParseItem(agg)
		if err != nil {
			return err
		}
		switch it.Kind {
		case ItemData:
			if c.deps.Data == nil {
				return fmt.Errorf("%w: %s", ErrNoData, it)
			}
			if _, _, err := c.deps.Data.Erase(ctx, it.ID, rm); err != nil {
				return err
			}
		case ItemSession, ItemScope:
			if _, err := c.call(ctx, it, body); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %q names no aggregate", ErrBadItem, agg)
		}
	}
	return nil
}
