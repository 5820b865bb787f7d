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
	res := Resumed{Next: from}
	led, err := events.ReadLedgerFrom(ctx, c.deps.Reader, from, 0)
	if err != nil {
		return res, fmt.Errorf("%w: read the removal ledger: %w", ErrUnavailable, err)
	}
	for _, rm := range led.Pending() {
		rec, err := events.LoadRemoval(ctx, c.deps.Log, rm.GetId())
		if err != nil {
			return res, fmt.Errorf("%w: read removal %s: %w", ErrUnavailable, rm.GetId(), err)
		}
		if rec.DoneSeq > 0 {
			continue // a plan's item, finished by its plan above
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
		if rec, err = events.LoadRemoval(ctx, c.deps.Log, rm.GetId()); err == nil {
			res.Last = max(res.Last, rec.DoneSeq)
		}
		res.Removals++
	}
	res.Next = led.Last + 1
	if rm := c.deps.ReadModel; rm != nil && res.Last > 0 {
		if err := rm.WaitFor(ctx, res.Last); err != nil {
			return res, fmt.Errorf("%w: the read model has not applied the resumed removals (up to %d): %w", ErrUnavailable, res.Last, err)
		}
	}
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
