package projections

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ApplyBatch applies recs, in order, and advances the checkpoint to the last
// one, all in ONE bbolt transaction: either every effect and the checkpoint
// are committed or none is. A record whose Seq is not above the checkpoint
// was applied before and is skipped, so re-reading records after a crash
// has no effect twice (exactly-once effect). Records must come in increasing
// sequence order, as an ordered consumer delivers them.
//
// Sessions, scopes (entries.go) and large data (data.go) are projected;
// records of other subject kinds only advance the checkpoint. A record that
// cannot be applied (unknown event type, event for a missing session,
// message or entry version out of order) fails the whole call with an
// *ApplyError naming it; nothing of the call is committed.
func (s *Store) ApplyBatch(recs []Decoded) error {
	_, err := s.applyBounded(context.Background(), recs, time.Time{})
	return err
}

// applyBounded is ApplyBatch for the projector, bounded in time: once
// deadline has passed (the zero time: never) it takes no further record,
// commits those it went through (applied, or skipped as applied before)
// and returns how many they are, at least one; the caller applies the rest
// in another transaction. When ctx ends it stops between two records and
// returns ctx's error, and the transaction rolls back: nothing of recs is
// committed and the checkpoint stays where it was, so the records are
// applied exactly once when they are read again.
func (s *Store) applyBounded(ctx context.Context, recs []Decoded, deadline time.Time) (int, error) {
	return s.applyBoundedIn(ctx, 0, recs, deadline)
}

// applyBoundedIn is applyBounded for the records of log partition part,
// against that partition's checkpoint.
func (s *Store) applyBoundedIn(ctx context.Context, part int, recs []Decoded, deadline time.Time) (int, error) {
	done := 0
	err := s.applyTxIn(part, "apply batch", func(w *writer, cp *uint64) error {
		for ; done < len(recs); done++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if done > 0 && !deadline.IsZero() && time.Now().After(deadline) {
				break
			}
			if _, err := w.applyRecs(recs[done:done+1], cp); err != nil {
				return err
			}
		}
		return ctx.Err() // once more before the flush and the commit
	})
	if err != nil {
		return 0, err
	}
	return done, nil
}

// applyTxIn runs fill in ONE write transaction with a writer on it; cp is the
// checkpoint, which fill advances (applyRecs). If it advanced, the writer is
// flushed and the new checkpoint stored with the effects, and AppliedSeq
// mirrors it after the commit. An *ApplyError is returned as is, any other
// error wrapped with what.
//
// part is the log partition whose checkpoint cp is (0 with the log in one
// stream).
func (s *Store) applyTxIn(part int, what string, fill func(w *writer, cp *uint64) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	var cp uint64
	var keys *keyChanges
	err := s.db.Update(func(tx *bolt.Tx) error {
		s.limitGrowth(tx)
		meta := tx.Bucket(bucketMeta)
		cp = getU64(meta, checkpointKey(part))
		start := cp
		w := newWriter(tx)
		w.corpus = s.corpus
		keys = &w.keys
		if err := fill(w, &cp); err != nil {
			return err
		}
		if cp == start {
			return nil
		}
		if err := w.flush(); err != nil {
			return err
		}
		return meta.Put(checkpointKey(part), u64(cp))
	})
	if err != nil {
		var ae *ApplyError
		if errors.As(err, &ae) {
			return err
		}
		return fmt.Errorf("projections: %s: %w", what, noRoom(err))
	}
	if part == 0 {
		s.applied.Store(cp)
	} else {
		s.partApplied[part].Store(cp)
	}
	s.keySums.commit(keys)
	return nil
}

// applyRecs applies the records of recs above the checkpoint *cp, in order,
// advancing *cp to each; it returns how many it applied. A record at or
// below *cp was applied before and is skipped.
func (w *writer) applyRecs(recs []Decoded, cp *uint64) (uint64, error) {
	var n uint64
	for i := range recs {
		r := &recs[i]
		if r.Seq <= *cp {
			continue
		}
		if skip, err := w.skips(r); err != nil {
			return n, &ApplyError{Seq: r.Seq, Subject: r.Subject, Err: err}
		} else if skip {
			// Another corpus's: read, not applied, but its command
			// indexed, so that an actor on any node recognises a
			// retried command from any file of its own.
			if err := w.indexCommand(r); err != nil {
				return n, &ApplyError{Seq: r.Seq, Subject: r.Subject, Err: err}
			}
			*cp = r.Seq
			n++
			continue
		}
		if err := w.apply(r); err != nil {
			return n, &ApplyError{Seq: r.Seq, Subject: r.Subject, Err: err}
		}
		if err := w.indexCommand(r); err != nil {
			return n, &ApplyError{Seq: r.Seq, Subject: r.Subject, Err: err}
		}
		*cp = r.Seq
		n++
	}
	return n, nil
}
