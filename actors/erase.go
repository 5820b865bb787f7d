package actors

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// An EraseAggregate (proto/memory/v1/erasure.proto) erases the aggregate
// that receives it: every message of its subject leaves the
// log, its snapshot is deleted, and its state is emptied, as if it had
// never been written. The node's eraser sends it once the caller is
// authorized (api); the actor does not check who.
//
// The removal is recorded first, content-free, on mem.ev.removal.<removal_id>
// (a LogRemoval naming every sequence that goes), then the messages are
// purged and the snapshot deleted, then a LogRemovalCompleted follows. An
// EraseAggregate with the id of a removal already recorded resumes it (a
// crash in the middle): it never records a second one.

// ErrCannotRemove is returned when the log cannot remove messages (it is
// not an events.Remover, or its stream denies deletes).
var ErrCannotRemove = errors.New("actors: the log cannot remove messages")

// removalLogs are what a removal of the actor's messages goes through:
// the log's Remover, and the log holding the removal's ledger records
// (the actor's own stream when the log is in partitions:
// events.LedgerLogOf).
type removalLogs struct {
	remover events.Remover
	ledger  events.Log
}

// startRemoval begins (or resumes) removal id, which this actor carries
// out: the id checked, the logs it goes through, a context bounding the
// whole removal (cancel it), and what the ledger already holds of it.
func (c *core) startRemoval(id string) (context.Context, context.CancelFunc, removalLogs, events.RemovalRecords, error) {
	deps := c.dir.deps
	var (
		led  events.RemovalRecords
		logs removalLogs
		ok   bool
	)
	if err := events.ValidateID("removal_id", id); err != nil {
		return nil, nil, logs, led, err
	}
	if logs.remover, ok = deps.Log.(events.Remover); !ok {
		return nil, nil, logs, led, fmt.Errorf("%w (%T)", ErrCannotRemove, deps.Log)
	}
	var err error
	if logs.ledger, err = events.LedgerLogOf(deps.Log, c.subject); err != nil {
		return nil, nil, logs, led, fmt.Errorf("%w: the ledger of %s: %v", ErrUnavailable, c.subject, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.dir.cfg.StoreTimeout)
	led, err = events.LoadRemoval(ctx, logs.ledger, id)
	if err != nil {
		cancel()
		return nil, nil, logs, led, fmt.Errorf("%w: read removal %s: %v", ErrUnavailable, id, err)
	}
	return ctx, cancel, logs, led, nil
}

// erase serves req (see EraseAggregate) and replies with the receipt of this
// aggregate's removal.
func (c *core) erase(req *memoryv1.EraseAggregate) (*memoryv1.EraseReceipt, error) {
	deps := c.dir.deps
	if c.snapFlight != nil { // a snapshot put in flight must not come back after the delete
		<-c.snapFlight
		c.snapFlight = nil
	}
	ctx, cancel, logs, led, err := c.startRemoval(req.GetRemovalId())
	if err != nil {
		return nil, err
	}
	defer cancel()
	if led.Removal == nil {
		seqs, err := events.SubjectSeqs(ctx, deps.Log, c.subject)
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %v", ErrUnavailable, c.subject, err)
		}
		led.Removal = &memoryv1.LogRemoval{
			Id: req.GetRemovalId(), Reason: req.GetReason(), Target: req.GetTarget(), RequestedBy: req.GetRequestedBy(), Why: req.GetWhy(),
			AtUnixNano: deps.Now().UnixNano(),
			Subjects:   []string{c.subject},
			Removed:    events.RemovalSpans(events.Spans(seqs)),
			Erased:     []string{c.mk.kind + "." + c.id},
			Messages:   uint64(len(seqs)),
		}
		if led.RemovalSeq, err = events.AppendRemoval(ctx, logs.ledger, deps.Codec, led.Removal, deps.Now()); err != nil {
			deps.Metrics.StoreFailures.Inc()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	// Everything of the subject before the removal record goes: the actor
	// wrote nothing since it listed them.
	if err := logs.remover.RemoveSubject(ctx, c.subject, led.RemovalSeq); err != nil {
		if errors.Is(err, events.ErrDenyDelete) {
			return nil, fmt.Errorf("%w: %v", ErrCannotRemove, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := deps.Snapshots.Delete(ctx, c.snapshotKey()); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if led.DoneSeq == 0 {
		if led.DoneSeq, err = events.CompleteRemoval(ctx, logs.ledger, deps.Codec, req.GetRemovalId(), led.RemovalSeq, deps.Now()); err != nil {
			deps.Metrics.StoreFailures.Inc()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	c.m, c.snapVersion, c.ring = c.mk.empty(c.id), 0, commandRing{}
	return &memoryv1.EraseReceipt{
		RemovalId: req.GetRemovalId(), Target: led.Removal.GetTarget(), Messages: led.Removal.GetMessages(),
		ErasedUnixNano: deps.Now().UnixNano(), RemovalSeq: led.DoneSeq,
	}, nil
}

// eraseEntry serves an EraseAggregate with a key (or its SHA-256) on a
// scope: the scope is rewritten without the key. In order: the LogRemoval
// (every message the subject holds now, rewritten: the scope), a
// ScopeBaseline batch (the state without the key's versions), the purge of
// the listed messages, a fresh snapshot over the old one, the
// LogRemovalCompleted. Resumed by the same removal id: a baseline is
// written only while the state still holds the key.
func (a *scopeActor) eraseEntry(req *memoryv1.EraseAggregate) (*memoryv1.EraseReceipt, error) {
	deps := a.dir.deps
	ctx, cancel, logs, led, err := a.startRemoval(req.GetRemovalId())
	if err != nil {
		return nil, err
	}
	defer cancel()
	key, named := req.GetKey(), req.GetKey()
	if key == "" {
		named = fmt.Sprintf("#%x", req.GetKeySha256())
		var sum [sha256.Size]byte
		if copy(sum[:], req.GetKeySha256()) == sha256.Size {
			key, _ = a.st().KeyBySHA256(sum) // "" once the baseline is stored (a resumed erase)
		}
	}
	if led.Removal == nil {
		if _, held := a.st().Without(key); !held {
			return nil, &sharedmemNotFound{key: named}
		}
		seqs, err := events.SubjectSeqs(ctx, deps.Log, a.subject)
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %v", ErrUnavailable, a.subject, err)
		}
		led.Removal = &memoryv1.LogRemoval{
			Id: req.GetRemovalId(), Reason: req.GetReason(), Target: req.GetTarget(), RequestedBy: req.GetRequestedBy(), Why: req.GetWhy(),
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
	base, _ := a.st().Without(key) // nil once the baseline is stored
	if err := a.rewrite(ctx, logs, &led, req.GetRemovalId(), base, "erasing an entry"); err != nil {
		return nil, err
	}
	return &memoryv1.EraseReceipt{
		RemovalId: req.GetRemovalId(), Target: led.Removal.GetTarget(), Messages: led.Removal.GetMessages(),
		Entries: []string{named}, ErasedUnixNano: deps.Now().UnixNano(), RemovalSeq: led.DoneSeq,
	}, nil
}

// sharedmemNotFound is the 404 of an entry erase of a key the scope does
// not hold.
type sharedmemNotFound struct{ key string }

func (e *sharedmemNotFound) Error() string { return "key " + e.key + " is not in the scope" }

// Status is (404, key, reason).
func (e *sharedmemNotFound) Status() (int, string, string) {
	return 404, "key", "key " + e.key + " is not in the scope (or was erased)"
}

// rewrite finishes the rewrite of the scope recorded as removal id (led:
// its records): it stores the ScopeBaseline base (nil: stored already),
// purges every message the LogRemoval lists, replaces the snapshot (the
// old one holds what went) and records the completion. An entry erase and
// a compaction share it; what names the step in errors.
func (a *scopeActor) rewrite(ctx context.Context, logs removalLogs, led *events.RemovalRecords, id string, base *memoryv1.ScopeSnapshot, what string) error {
	deps := a.dir.deps
	if base != nil {
		if _, err := a.mutate("", func() ([]proto.Message, error) {
			return []proto.Message{&memoryv1.ScopeBaseline{State: base, RemovalId: id}}, nil
		}); err != nil {
			return err
		}
	}
	if r := led.Removal.GetRemoved(); len(r) > 0 {
		if err := logs.remover.RemoveSubject(ctx, a.subject, r[len(r)-1].GetLast()); err != nil {
			if errors.Is(err, events.ErrDenyDelete) {
				return fmt.Errorf("%w: %v", ErrCannotRemove, err)
			}
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	if a.snapFlight != nil {
		<-a.snapFlight
		a.snapFlight = nil
	}
	data, err := a.m.marshal()
	if err == nil {
		err = a.putSnapshot(data)
	}
	if err != nil {
		return fmt.Errorf("%w: snapshot after %s: %v", ErrUnavailable, what, err)
	}
	a.snapVersion = a.m.Version()
	if led.DoneSeq == 0 {
		if led.DoneSeq, err = events.CompleteRemoval(ctx, logs.ledger, deps.Codec, id, led.RemovalSeq, deps.Now()); err != nil {
			deps.Metrics.StoreFailures.Inc()
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	return nil
}
