package actors

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// An EraseAggregate (proto/memory/v1/erasure.proto) erases the aggregate
// that receives it (DESIGN §12): every message of its subject leaves the
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

// erase serves req (see EraseAggregate) and replies with the receipt of this
// aggregate's removal.
func (c *core) erase(req *memoryv1.EraseAggregate) (*memoryv1.EraseReceipt, error) {
	deps := c.dir.deps
	if err := events.ValidateID("removal_id", req.GetRemovalId()); err != nil {
		return nil, err
	}
	remover, ok := deps.Log.(events.Remover)
	if !ok {
		return nil, fmt.Errorf("%w (%T)", ErrCannotRemove, deps.Log)
	}
	if c.snapFlight != nil { // a snapshot put in flight must not come back after the delete
		<-c.snapFlight
		c.snapFlight = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.dir.cfg.StoreTimeout)
	defer cancel()
	subj := events.RemovalSubject(req.GetRemovalId())
	led, err := loadRemoval(ctx, deps.Log, subj)
	if err != nil {
		return nil, fmt.Errorf("%w: read removal %s: %v", ErrUnavailable, req.GetRemovalId(), err)
	}
	if led.removal == nil {
		seqs, err := events.SubjectSeqs(ctx, deps.Log, c.subject)
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %v", ErrUnavailable, c.subject, err)
		}
		led.removal = &memoryv1.LogRemoval{
			Id: req.GetRemovalId(), Reason: req.GetReason(), Target: req.GetTarget(), RequestedBy: req.GetRequestedBy(), Why: req.GetWhy(),
			AtUnixNano: deps.Now().UnixNano(),
			Subjects:   []string{c.subject},
			Removed:    events.RemovalSpans(events.Spans(seqs)),
			Erased:     []string{c.mk.kind + "." + c.id},
			Messages:   uint64(len(seqs)),
		}
		if led.removalSeq, err = appendLedger(ctx, deps, subj, 0, req.GetRemovalId(), led.removal); err != nil {
			return nil, err
		}
	}
	// Everything of the subject before the removal record goes: the actor
	// wrote nothing since it listed them.
	if err := remover.RemoveSubject(ctx, c.subject, led.removalSeq); err != nil {
		if errors.Is(err, events.ErrDenyDelete) {
			return nil, fmt.Errorf("%w: %v", ErrCannotRemove, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := deps.Snapshots.Delete(ctx, c.snapshotKey()); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if led.doneSeq == 0 {
		done := &memoryv1.LogRemovalCompleted{Id: req.GetRemovalId(), AtUnixNano: deps.Now().UnixNano()}
		if led.doneSeq, err = appendLedger(ctx, deps, subj, led.removalSeq, req.GetRemovalId()+".done", done); err != nil {
			return nil, err
		}
	}
	c.m, c.snapVersion, c.ring = c.mk.empty(c.id), 0, commandRing{}
	return &memoryv1.EraseReceipt{
		RemovalId: req.GetRemovalId(), Target: led.removal.GetTarget(), Messages: led.removal.GetMessages(),
		ErasedUnixNano: deps.Now().UnixNano(), RemovalSeq: led.doneSeq,
	}, nil
}

// removalRecords is what a removal subject holds.
type removalRecords struct {
	removal             *memoryv1.LogRemoval
	removalSeq, doneSeq uint64
}

func loadRemoval(ctx context.Context, log events.Log, subj string) (removalRecords, error) {
	var out removalRecords
	_, err := log.Load(ctx, subj, 0, func(rec events.Record) error {
		rm, done, err := events.DecodeRemoval(rec.Data)
		switch {
		case err != nil:
			return err
		case rm != nil:
			out.removal, out.removalSeq = rm, rec.Seq
		case done != nil:
			out.doneSeq = rec.Seq
		}
		return nil
	})
	return out, err
}

// appendLedger appends ev as the one event of a batch on removal subject
// subj after expected, deduplicated by msgID.
func appendLedger(ctx context.Context, deps Deps, subj string, expected uint64, msgID string, ev proto.Message) (uint64, error) {
	packed, err := deps.Codec.Pack([]proto.Message{ev})
	if err != nil {
		return 0, err
	}
	_, id, err := events.ParseSubject(subj)
	if err != nil {
		return 0, err
	}
	data, err := events.EncodeBatch(&memoryv1.EventBatch{
		CommandId: msgID, AggregateKind: events.KindRemoval, AggregateId: id,
		Version: ledgerVersion(expected), TimeUnixNano: deps.Now().UnixNano(),
		SchemaVersion: events.SchemaVersion, Events: packed,
	})
	if err != nil {
		return 0, err
	}
	res, err := deps.Log.Append(ctx, subj, expected, "removal."+msgID, data)
	if err != nil {
		deps.Metrics.StoreFailures.Inc()
		return 0, fmt.Errorf("%w: record removal on %s: %v", ErrUnavailable, subj, err)
	}
	return res.Seq, nil
}

// ledgerVersion is the version of a removal subject's batch: 1 for the
// LogRemoval, 2 for its LogRemovalCompleted.
func ledgerVersion(expected uint64) uint64 {
	if expected == 0 {
		return 1
	}
	return 2
}

// eraseEntry serves an EraseAggregate with a key on a scope: the scope is
// rewritten without the key (DESIGN §12). In order: the LogRemoval (every
// message the subject holds now, rewritten: the scope), a ScopeBaseline
// batch (the state without the key's versions), the purge of the listed
// messages, a fresh snapshot over the old one, the LogRemovalCompleted.
// Resumed by the same removal id: a baseline is written only while the
// state still holds the key.
func (a *scopeActor) eraseEntry(req *memoryv1.EraseAggregate) (*memoryv1.EraseReceipt, error) {
	deps := a.dir.deps
	if err := events.ValidateID("removal_id", req.GetRemovalId()); err != nil {
		return nil, err
	}
	remover, ok := deps.Log.(events.Remover)
	if !ok {
		return nil, fmt.Errorf("%w (%T)", ErrCannotRemove, deps.Log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*a.dir.cfg.StoreTimeout)
	defer cancel()
	subj := events.RemovalSubject(req.GetRemovalId())
	led, err := loadRemoval(ctx, deps.Log, subj)
	if err != nil {
		return nil, fmt.Errorf("%w: read removal %s: %v", ErrUnavailable, req.GetRemovalId(), err)
	}
	key := req.GetKey()
	if led.removal == nil {
		if _, held := a.st().Without(key); !held {
			return nil, &sharedmemNotFound{key: key}
		}
		seqs, err := events.SubjectSeqs(ctx, deps.Log, a.subject)
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %v", ErrUnavailable, a.subject, err)
		}
		led.removal = &memoryv1.LogRemoval{
			Id: req.GetRemovalId(), Reason: req.GetReason(), Target: req.GetTarget(), RequestedBy: req.GetRequestedBy(), Why: req.GetWhy(),
			AtUnixNano: deps.Now().UnixNano(),
			Subjects:   []string{a.subject},
			Removed:    events.RemovalSpans(events.Spans(seqs)),
			Rewritten:  []string{a.mk.kind + "." + a.id},
			Messages:   uint64(len(seqs)),
		}
		if led.removalSeq, err = appendLedger(ctx, deps, subj, 0, req.GetRemovalId(), led.removal); err != nil {
			return nil, err
		}
	}
	if base, held := a.st().Without(key); held {
		if _, err := a.mutate("", func() ([]proto.Message, error) {
			return []proto.Message{&memoryv1.ScopeBaseline{State: base, RemovalId: req.GetRemovalId()}}, nil
		}); err != nil {
			return nil, err
		}
	}
	var upTo uint64
	if r := led.removal.GetRemoved(); len(r) > 0 {
		upTo = r[len(r)-1].GetLast()
	}
	if upTo > 0 {
		if err := remover.RemoveSubject(ctx, a.subject, upTo); err != nil {
			if errors.Is(err, events.ErrDenyDelete) {
				return nil, fmt.Errorf("%w: %v", ErrCannotRemove, err)
			}
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
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
		return nil, fmt.Errorf("%w: snapshot after erasing %q: %v", ErrUnavailable, key, err)
	}
	a.snapVersion = a.m.Version()
	if led.doneSeq == 0 {
		done := &memoryv1.LogRemovalCompleted{Id: req.GetRemovalId(), AtUnixNano: deps.Now().UnixNano()}
		if led.doneSeq, err = appendLedger(ctx, deps, subj, led.removalSeq, req.GetRemovalId()+".done", done); err != nil {
			return nil, err
		}
	}
	return &memoryv1.EraseReceipt{
		RemovalId: req.GetRemovalId(), Target: led.removal.GetTarget(), Messages: led.removal.GetMessages(),
		Entries: []string{key}, ErasedUnixNano: deps.Now().UnixNano(), RemovalSeq: led.doneSeq,
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
