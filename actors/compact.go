package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// compact serves a CompactAggregate (a bounded log): when the
// scope's oldest message was written before req.before_unix_nano (its
// command time), the scope is rewritten from a ScopeBaseline holding its
// state trimmed to the window (sharedmem.State.Trimmed) and every message
// of its subject before the baseline is removed. The steps are an entry
// erase's (eraseEntry): the LogRemoval (reason COMPACT, every message the
// subject holds now, rewritten: the scope), the ScopeBaseline batch, the
// purge of the listed messages, a fresh snapshot, the LogRemovalCompleted.
// A second CompactAggregate of the same id resumes it: the baseline is
// written once (found by its removal id after the LogRemoval). A resume
// without before_unix_nano (the node's resumption of pending removals)
// writes the baseline untrimmed: still exact, trimmed by the next one.
//
// What the window keeps exact: every read of a scope (get, versions,
// history, rollback, list, search) reads its state, and the baseline
// holds every version updated inside the window and each key's current
// one; versions older than the window are gone (history says so by
// starting later). The scope's log after a compaction is the baseline and
// the messages since: bounded by the live entries plus the window.
func (a *scopeActor) compact(req *memoryv1.CompactAggregate) (*memoryv1.EraseReceipt, error) {
	deps := a.dir.deps
	ctx, cancel, logs, led, err := a.startRemoval(req.GetRemovalId())
	if err != nil {
		return nil, err
	}
	defer cancel()
	target := "scope:" + a.mk.kind + ":" + a.id
	if led.Removal == nil {
		seqs, oldest, err := subjectTimes(ctx, deps.Log, a.subject)
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %v", ErrUnavailable, a.subject, err)
		}
		if len(seqs) < 2 || oldest >= req.GetBeforeUnixNano() {
			// Nothing older than the window, or nothing a baseline would
			// replace: no removal.
			return &memoryv1.EraseReceipt{Target: target}, nil
		}
		led.Removal = &memoryv1.LogRemoval{
			Id: req.GetRemovalId(), Reason: memoryv1.RemovalReason_REMOVAL_REASON_COMPACT, Target: target, RequestedBy: "node",
			Why:        "bounded log: messages before " + time.Unix(0, req.GetBeforeUnixNano()).UTC().Format(time.RFC3339),
			AtUnixNano: deps.Now().UnixNano(),
			Subjects:   []string{a.subject},
			Removed:    events.RemovalSpans(events.Spans(seqs)),
			Rewritten:  []string{a.mk.kind + "." + a.id},
			Messages:   uint64(len(seqs)),
		}
		if led.RemovalSeq, err = events.AppendRemoval(ctx, logs.ledger, deps.Codec, led.Removal, deps.Now()); err != nil {
			deps.Metrics.StoreFailures.Inc()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	written, err := baselineWritten(ctx, deps.Log, a.subject, led.RemovalSeq, req.GetRemovalId())
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrUnavailable, a.subject, err)
	}
	var base *memoryv1.ScopeSnapshot
	if !written {
		base, _ = a.st().Trimmed(req.GetBeforeUnixNano())
	}
	if err := a.rewrite(ctx, logs, &led, req.GetRemovalId(), base, "compacting"); err != nil {
		return nil, err
	}
	return &memoryv1.EraseReceipt{
		RemovalId: req.GetRemovalId(), Target: target, Messages: led.Removal.GetMessages(),
		ErasedUnixNano: deps.Now().UnixNano(), RemovalSeq: led.DoneSeq,
	}, nil
}

// subjectTimes returns the sequences of subject's messages and the command
// time of the oldest (its batch's time, the stream's when the batch has
// none).
func subjectTimes(ctx context.Context, log events.Log, subject string) ([]uint64, int64, error) {
	var (
		seqs   []uint64
		oldest int64
	)
	_, err := log.Load(ctx, subject, 0, func(r events.Record) error {
		if len(seqs) == 0 {
			oldest = r.Time.UnixNano()
			if b, err := events.DecodeBatch(r.Data); err == nil && b.GetTimeUnixNano() != 0 {
				oldest = b.GetTimeUnixNano()
			}
		}
		seqs = append(seqs, r.Seq)
		return nil
	})
	return seqs, oldest, err
}

// baselineWritten reports whether subject holds, after sequence after, the
// ScopeBaseline of removal id.
func baselineWritten(ctx context.Context, log events.Log, subject string, after uint64, id string) (bool, error) {
	found := false
	_, err := log.Load(ctx, subject, after, func(r events.Record) error {
		b, err := events.DecodeBatch(r.Data)
		if err != nil {
			return err
		}
		for _, ev := range b.GetEvents() {
			base := &memoryv1.ScopeBaseline{}
			if ev.MessageIs(base) && ev.UnmarshalTo(base) == nil && base.GetRemovalId() == id {
				found = true
			}
		}
		return nil
	})
	return found, err
}
