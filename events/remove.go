package events

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// KindRemoval is the log kind of the removal ledger: one subject per
// removal, mem.ev.removal.<id>, holding a LogRemoval and then a
// LogRemovalCompleted (proto/memory/v1/erasure.proto). Nothing else is
// ever written there, and it is never removed.
const KindRemoval = "removal"

// RemovalSubjects is the WithSubjects filter of the whole removal ledger.
const RemovalSubjects = SubjectPrefix + "." + KindRemoval + ".>"

// RemovalSubject is the ledger subject of removal id (ValidateID).
func RemovalSubject(id string) string { return ScopeSubject(KindRemoval, id) }

// ErrDenyDelete is returned by a Remover whose stream refuses deletes and
// purges (created with deny_delete / deny_purge): move it with
// `replay migrate-log` first.
var ErrDenyDelete = errors.New("events: the log stream denies deletes and purges (move it with `replay migrate-log`)")

// Remover removes messages from the log: erasure and compaction.
// Every removal is listed in the removal ledger first (see
// KindRemoval); a Remover does not check that.
type Remover interface {
	// RemoveSubject removes every message of subject with a sequence at most
	// upTo. Removing what is already gone is not an error.
	RemoveSubject(ctx context.Context, subject string, upTo uint64) error
}

var (
	_ Remover = (*JetStreamLog)(nil)
	_ Remover = (*MemLog)(nil)
)

// RemoveSubject implements Remover with a purge of the subject up to upTo.
func (l *JetStreamLog) RemoveSubject(ctx context.Context, subject string, upTo uint64) error {
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return fmt.Errorf("events: remove %s: stream %s: %w", subject, l.stream, err)
	}
	if c := s.CachedInfo().Config; c.DenyPurge {
		return fmt.Errorf("%w: remove %s from stream %s", ErrDenyDelete, subject, l.stream)
	}
	// The purge keeps sequences from upTo+1 on: later messages of the
	// subject (none, when its writer is fenced) stay.
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(storedIn(l.part, subject)), jetstream.WithPurgeSequence(upTo+1)); err != nil {
		return fmt.Errorf("events: remove %s up to %d from stream %s: %w", subject, upTo, l.stream, err)
	}
	return nil
}

// RemoveSubject implements Remover.
func (l *MemLog) RemoveSubject(ctx context.Context, subject string, upTo uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Nothing left to remove is not an error: a resumed removal.
	_ = l.remove(func(r Record) bool { return r.Subject == subject && r.Seq <= upTo })
	return nil
}

// SubjectSeqs returns the sequences of subject's messages, in order, as
// Load reads them (up to the subject's last sequence at the start).
func SubjectSeqs(ctx context.Context, l Log, subject string) ([]uint64, error) {
	var seqs []uint64
	_, err := l.Load(ctx, subject, 0, func(r Record) error {
		seqs = append(seqs, r.Seq)
		return nil
	})
	return seqs, err
}

// SeqSpan is the closed range of sequences [First, Last].
type SeqSpan struct{ First, Last uint64 }

// Spans packs increasing sequences into maximal runs of consecutive ones.
func Spans(seqs []uint64) []SeqSpan {
	var out []SeqSpan
	for _, s := range seqs {
		if n := len(out); n > 0 && out[n-1].Last+1 == s {
			out[n-1].Last = s
			continue
		}
		out = append(out, SeqSpan{s, s})
	}
	return out
}

// SpanSet answers whether a sequence is covered by a set of spans.
type SpanSet struct{ spans []SeqSpan } // sorted by First, merged

// Add adds spans to the set.
func (s *SpanSet) Add(spans ...SeqSpan) {
	s.spans = append(s.spans, spans...)
	slices.SortFunc(s.spans, func(a, b SeqSpan) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	merged := s.spans[:0]
	for _, sp := range s.spans {
		if n := len(merged); n > 0 && sp.First <= merged[n-1].Last+1 {
			merged[n-1].Last = max(merged[n-1].Last, sp.Last)
			continue
		}
		merged = append(merged, sp)
	}
	s.spans = merged
}

// Covers reports whether every sequence of [first, last] is in the set. A
// nil set covers nothing (but the empty range).
func (s *SpanSet) Covers(first, last uint64) bool {
	if last < first {
		return true
	}
	if s == nil {
		return false
	}
	i, _ := slices.BinarySearchFunc(s.spans, first, func(sp SeqSpan, seq uint64) int {
		switch {
		case sp.Last < seq:
			return -1
		case sp.First > seq:
			return 1
		}
		return 0
	})
	return i < len(s.spans) && s.spans[i].First <= first && s.spans[i].Last >= last
}

// NextUncovered returns the first sequence at or after seq that the set
// does not hold.
func (s *SpanSet) NextUncovered(seq uint64) uint64 {
	if s == nil {
		return seq
	}
	i, found := slices.BinarySearchFunc(s.spans, seq, func(sp SeqSpan, seq uint64) int {
		switch {
		case sp.Last < seq:
			return -1
		case sp.First > seq:
			return 1
		}
		return 0
	})
	if !found {
		return seq
	}
	return s.spans[i].Last + 1 // spans are merged: the next one starts later
}

// Len is the number of spans in the set.
func (s *SpanSet) Len() int { return len(s.spans) }

// Gaps returns the runs of [first, last] the set does not cover, in
// order (none when it covers them all; [first, last] itself for a nil or
// empty set).
func (s *SpanSet) Gaps(first, last uint64) []SeqSpan {
	if last < first {
		return nil
	}
	var spans []SeqSpan
	if s != nil {
		spans = s.spans
	}
	// The first span that ends at or after first.
	i, _ := slices.BinarySearchFunc(spans, first, func(sp SeqSpan, seq uint64) int {
		if sp.Last < seq {
			return -1
		}
		return 1
	})
	var out []SeqSpan
	next := first // the first sequence not yet looked at
	for ; i < len(spans) && spans[i].First <= last; i++ {
		if sp := spans[i]; sp.First > next {
			out = append(out, SeqSpan{next, sp.First - 1})
		}
		if spans[i].Last >= last {
			return out
		}
		next = max(next, spans[i].Last+1)
	}
	return append(out, SeqSpan{next, last})
}
