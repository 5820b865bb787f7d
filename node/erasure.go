package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// resumeTimeout bounds the resumption of the removals a crash left pending.
const resumeTimeout = 2 * time.Minute

// resumeRemovals finishes the erase requests and the removals of the log's ledger that have no
// LogRemovalCompleted (a crash in the middle of an erase, DESIGN §12):
// each goes again to the actor of its aggregate, which finds its
// LogRemoval and completes it (purge, snapshot, completion) without
// recording a second one. It runs before the API serves, so no write
// reaches a half-erased aggregate.
func resumeRemovals(ctx context.Context, led *events.Ledger, log events.Log, codec *events.Codec, d placedDispatch, data api.DataStore) (int, uint64, error) {
	n, last := 0, uint64(0)
	for _, rm := range led.Pending() {
		if len(rm.GetPlanned()) > 0 {
			// An erase request's plan: its items (each resumed or done
			// again as a no-op), then its completion.
			rc, err := api.RunPlan(ctx, d, d, data, rm.LogRemoval)
			if err != nil {
				return n, last, fmt.Errorf("node: resume erase %s (%s): %w", rm.GetId(), rm.GetTarget(), err)
			}
			seq, err := events.CompleteRemoval(ctx, log, codec, rm.GetId(), rm.Seq, time.Now())
			if err != nil {
				return n, last, err
			}
			n, last = n+1, max(last, seq, rc.GetRemovalSeq())
			continue
		}
		// A plan's item is done by its plan above (earlier in the log);
		// what is still pending now resumes on its own.
		rec, err := events.LoadRemoval(ctx, log, rm.GetId())
		if err != nil {
			return n, last, err
		}
		if rec.DoneSeq > 0 {
			continue
		}
		if err := resumeRemoval(ctx, rm.LogRemoval, d); err != nil {
			return n, last, fmt.Errorf("node: resume removal %s (%s): %w", rm.GetId(), rm.GetTarget(), err)
		}
		if rec, err = events.LoadRemoval(ctx, log, rm.GetId()); err == nil {
			last = max(last, rec.DoneSeq)
		}
		n++
	}
	return n, last, nil
}

func resumeRemoval(ctx context.Context, rm *memoryv1.LogRemoval, d placedDispatch) error {
	var body proto.Message
	erase := &memoryv1.EraseAggregate{RemovalId: rm.GetId(), Reason: rm.GetReason(), Target: rm.GetTarget(), RequestedBy: rm.GetRequestedBy(), Why: rm.GetWhy()}
	body = erase
	aggs := rm.GetErased()
	switch {
	case rm.GetReason() == memoryv1.RemovalReason_REMOVAL_REASON_COMPACT:
		// A bounded-log compaction of a scope (actors: compact): resumed
		// by its actor, the baseline untrimmed if not written yet.
		body = &memoryv1.CompactAggregate{RemovalId: rm.GetId()}
		aggs = rm.GetRewritten()
	case len(rm.GetRewritten()) > 0:
		// An entry erase is always an item of an erase plan, which
		// resumes it with its key (api.RunPlan, above in the same pass).
		return fmt.Errorf("the rewrite of %v is an erase plan's item, resumed by its plan", rm.GetRewritten())
	}
	for _, agg := range aggs {
		kind, id, ok := strings.Cut(agg, ".")
		if !ok {
			return fmt.Errorf("aggregate %q is not <kind>.<id>", agg)
		}
		if _, err := api.CallActor(ctx, func(reply actors.ReplyFunc) error {
			if kind == events.KindSession {
				return d.Dispatch(id, nil, body, reply)
			}
			return d.DispatchScope(api.ScopeKindOf(kind), id, nil, body, reply)
		}); err != nil {
			return err
		}
	}
	return nil
}

// resumeEvery is how often the node looks for removals left pending.
const resumeEvery = 30 * time.Second

// resumeOnce resumes the pending removals, logging what it did or why it
// could not (the loop tries again).
func (n *Node) resumeOnce(ctx context.Context, r events.StreamReader, log events.Log, codec *events.Codec, d placedDispatch, data api.DataStore) {
	rctx, cancel := context.WithTimeout(ctx, resumeTimeout)
	defer cancel()
	led, err := events.ReadLedgerFrom(rctx, r, n.resumeFrom, 0)
	if err != nil {
		n.logger.Error("cannot read the removal ledger (retrying)", "err", err)
		return
	}
	resumed, last, err := resumeRemovals(rctx, led, log, codec, d, data)
	if err != nil {
		n.logger.Error("erasures left half done could not all be resumed (retrying)", "resumed", resumed, "err", err)
		return
	}
	// Every removal recorded up to led.Last is complete now: the next
	// pass reads only what comes after.
	n.resumeFrom = led.Last + 1
	// Nothing erased is readable once the API serves: the projection
	// applies the removals first.
	if n.proj != nil && last > 0 {
		if err := n.proj.WaitFor(rctx, last); err != nil {
			n.logger.Error("the projection has not applied the resumed erasures", "seq", last, "err", err)
		}
	}
	if resumed > 0 {
		n.logger.Warn("resumed erasures a crash left half done", "removals", resumed)
	}
}

// resumeLoop runs resumeOnce every resumeEvery until ctx ends. A removal
// in progress looks pending too: its actor serves the second request after
// the first, which finds it completed.
func (n *Node) resumeLoop(ctx context.Context, r events.StreamReader, log events.Log, codec *events.Codec, d placedDispatch, data api.DataStore) error {
	return every(ctx, resumeEvery, func() { n.resumeOnce(ctx, r, log, codec, d, data) })
}

// every calls fn every d until ctx ends, then returns nil: the loops of
// the node's sweeps (erasure resumption, compaction, retention).
func every(ctx context.Context, d time.Duration, fn func()) error {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			fn()
		}
	}
}

// ledger is the api's removal ledger on the node's log.
type ledger struct {
	log    events.Log
	reader events.StreamReader
	codec  *events.Codec
}

func (l ledger) End(ctx context.Context) (uint64, error) {
	b, err := l.reader.Bounds(ctx)
	return b.Last, err
}

func (l ledger) Load(ctx context.Context, id string) (events.RemovalRecords, error) {
	return events.LoadRemoval(ctx, l.log, id)
}

func (l ledger) Plan(ctx context.Context, rm *memoryv1.LogRemoval) (uint64, error) {
	return events.AppendRemoval(ctx, l.log, l.codec, rm, time.Now())
}

func (l ledger) Complete(ctx context.Context, id string, seq uint64) (uint64, error) {
	return events.CompleteRemoval(ctx, l.log, l.codec, id, seq, time.Now())
}
