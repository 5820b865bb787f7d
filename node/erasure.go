package node

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/erasure"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// resumeTimeout bounds the resumption of the removals a crash left pending.
const resumeTimeout = 2 * time.Minute

// resumeEvery is how often the node looks for removals left pending;
// after a pass that could not finish them all it looks again sooner, from
// resumeRetry doubling up to resumeEvery (a JetStream not answering yet
// right after a restart, a partition whose owner just died).
const (
	resumeEvery = 30 * time.Second
	resumeRetry = time.Second
)

// resumeOnce finishes the erasures and compactions a crash left half done
// (erasure.Coordinator.Resume), logging what it did or why it could not,
// and reports whether every one is finished. It runs once before the API
// serves, so no write reaches a half-erased aggregate, and nothing erased
// is readable once the API serves: Resume waits for the projection to
// apply what it wrote.
func (n *Node) resumeOnce(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, resumeTimeout)
	defer cancel()
	if n.plog != nil && n.cfg.LogPartitions > 1 {
		return n.resumePartitions(rctx)
	}
	res, err := n.eraser.Resume(rctx, n.resumeFrom)
	// Every removal recorded before res.Next is complete now: the next
	// pass reads only what comes after.
	n.resumeFrom = max(n.resumeFrom, res.Next)
	if err != nil {
		n.logger.Error("erasures left half done could not all be resumed (retrying)", "resumed", res.Removals, "err", err)
		return false
	}
	if res.Removals > 0 {
		n.logger.Warn("resumed erasures a crash left half done", "removals", res.Removals)
	}
	return true
}

// resumePartitions is resumeOnce for the log in K > 1 partitions: each
// stream's ledger from where the last pass finished it.
func (n *Node) resumePartitions(ctx context.Context) bool {
	res, err := n.eraser.ResumePartitions(ctx, n.resumeFromParts)
	if n.resumeFromParts == nil {
		n.resumeFromParts = make([]uint64, len(res))
	}
	removals := 0
	for i, r := range res {
		n.resumeFromParts[i] = max(n.resumeFromParts[i], r.Next)
		removals += r.Removals
	}
	if err != nil {
		n.logger.Error("erasures left half done could not all be resumed (retrying)", "resumed", removals, "err", err)
		return false
	}
	if removals > 0 {
		n.logger.Warn("resumed erasures a crash left half done", "removals", removals)
	}
	return true
}

// markedErasures are the actors an erasure's removals go to with the log
// in partitions: each receipt's removal sequence marks the partition of
// its aggregate, so that the erase's wait for the read model covers it
// when another node owns the aggregate (partitionMarks).
type markedErasures struct {
	erasure.Actors
	marks *partitionMarks
}

func (m markedErasures) mark(id string, reply actors.ReplyFunc) actors.ReplyFunc {
	return func(r proto.Message, err error) {
		if rc, ok := r.(*memoryv1.EraseReceipt); ok && err == nil && rc.GetRemovalSeq() > 0 {
			m.marks.raise(events.LogPartition(id, len(m.marks.marks)), rc.GetRemovalSeq())
		}
		reply(r, err)
	}
}

func (m markedErasures) Dispatch(id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	return m.Actors.Dispatch(id, who, body, m.mark(id, reply))
}

func (m markedErasures) DispatchScope(kind sharedmem.Kind, id string, who *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	return m.Actors.DispatchScope(kind, id, who, body, m.mark(id, reply))
}

// resumeLoop runs resumeOnce until ctx ends: every resumeEvery, sooner
// after a pass that failed. ok says whether the pass at start finished.
func (n *Node) resumeLoop(ctx context.Context, ok bool) error {
	wait := resumeEvery
	if !ok {
		wait = resumeRetry
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if n.resumeOnce(ctx) {
			wait = resumeEvery
		} else {
			wait = min(2*wait, resumeEvery)
		}
		t.Reset(wait)
	}
}

// every calls fn every d until ctx ends, then returns nil: the loops of
// the node's sweeps (compaction, retention).
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
