package largedata

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Erase erases large data id under removal removalID: the
// LogRemoval first (its reference's messages on mem.ev.data.<id>, the
// aggregate "data.<id>" whose index rows the projections delete), then the
// object, its messages, and the completion. A removal already recorded is
// resumed, one completed answered again. It returns the removal's
// completion sequence and the number of log messages removed.
func (s *Store) Erase(ctx context.Context, id string, base *memoryv1.LogRemoval) (uint64, uint64, error) {
	if err := checkID(id); err != nil {
		return 0, 0, err
	}
	remover, ok := s.log.(events.Remover)
	if !ok {
		return 0, 0, fmt.Errorf("largedata: erase %s: the log (%T) cannot remove messages", id, s.log)
	}
	subject := events.ScopeSubject(Kind, id)
	// The ledger records go to the stream of the data's subject (the log
	// in partitions).
	ledger, err := events.LedgerLogOf(s.log, subject)
	if err != nil {
		return 0, 0, fmt.Errorf("largedata: erase %s: %w", id, err)
	}
	rec, err := events.LoadRemoval(ctx, ledger, base.GetId())
	if err != nil {
		return 0, 0, fmt.Errorf("largedata: erase %s: %w", id, err)
	}
	if rec.Removal == nil {
		seqs, err := events.SubjectSeqs(ctx, s.log, subject)
		if err != nil {
			return 0, 0, fmt.Errorf("largedata: erase %s: %w", id, err)
		}
		rm := &memoryv1.LogRemoval{Id: base.GetId(), Reason: base.GetReason(), Target: base.GetTarget(), RequestedBy: base.GetRequestedBy(),
			Why: base.GetWhy(), AtUnixNano: s.now().UnixNano(), Subjects: []string{subject},
			Removed: events.RemovalSpans(events.Spans(seqs)), Erased: []string{Kind + "." + id}, Messages: uint64(len(seqs))}
		if rec.RemovalSeq, err = events.AppendRemoval(ctx, ledger, s.codec, rm, s.now()); err != nil {
			return 0, 0, err
		}
		rec.Removal = rm
	}
	if err := s.obj.Delete(ctx, id); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return 0, 0, fmt.Errorf("largedata: erase %s: delete object: %w", id, err)
	}
	s.mem.remove(id)
	if err := remover.RemoveSubject(ctx, subject, rec.RemovalSeq); err != nil {
		return 0, 0, fmt.Errorf("largedata: erase %s: %w", id, err)
	}
	if rec.DoneSeq == 0 {
		if rec.DoneSeq, err = events.CompleteRemoval(ctx, ledger, s.codec, base.GetId(), rec.RemovalSeq, s.now()); err != nil {
			return 0, 0, err
		}
	}
	return rec.DoneSeq, rec.Removal.GetMessages(), nil
}
