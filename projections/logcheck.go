package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/events"
)

// The log is read whole by Rebuild: every sequence from 1 to the last one,
// but those the removal ledger lists. checkLog refuses a stream that cannot give that before anything is read;
// consume (bounded) catches what changes while it reads; readFailed says
// why a bounded read got no message.

// gapDetailsMax is the most missing sequences whose list Rebuild asks the
// server for, to name them; beyond it only their number is given.
const gapDetailsMax = 4096

// infoTimeout bounds the stream info requests that explain a failed read.
const infoTimeout = 5 * time.Second

// bounds returns the log's bounds; a missing stream wraps ErrStreamNotFound.
func bounds(ctx context.Context, r events.StreamReader, stream string) (events.Bounds, error) {
	b, err := r.Bounds(ctx)
	if errors.Is(err, events.ErrNoStream) {
		return b, newLogError(ErrStreamNotFound, "stream %s not found", stream)
	}
	if err != nil {
		return b, fmt.Errorf("projections: stream %s info: %w", stream, err)
	}
	return b, nil
}

// checkLog returns the stream's last sequence and the sequences the
// removal ledger lists (nil when the stream holds every sequence: no ledger
// is read), if the stream can give that; otherwise an error wrapping
// ErrStreamNotFound, ErrLogTruncated or ErrLogGap that says what is
// missing.
//
// A sequence the removal ledger lists (events.ReadLedger: erased or
// compacted on purpose) may be missing anywhere. The stream must hold
// every other sequence from 1: a moved first sequence or a gap the ledger
// does not list is data loss and is refused.
func checkLog(ctx context.Context, r events.StreamReader, stream string) (last uint64, removed *events.SpanSet, err error) {
	b, err := bounds(ctx, r, stream)
	if err != nil {
		return 0, nil, err
	}
	if b.Last == 0 {
		return 0, nil, nil // never written
	}
	if b.First > 1 || b.Missing() > 0 {
		led, err := events.ReadLedger(ctx, r, b.Last)
		if err != nil {
			return 0, nil, fmt.Errorf("projections: stream %s: %w", stream, err)
		}
		removed = &led.Removed
	}
	switch {
	case b.First > 1 && !removed.Covers(1, b.First-1):
		return 0, nil, newLogError(ErrLogTruncated, "stream %s is truncated: %s purged (%s)",
			stream, seqRange(1, b.First-1), describeBounds(b))
	case b.Missing() > 0:
		missing, ok := listMissing(ctx, r, gapDetailsMax)
		if ok && len(unlisted(missing, removed)) == 0 {
			break // every one erased or compacted on purpose
		}
		if !ok && removed.Len() > 0 {
			break // too many to list here: the bounded read checks each one
		}
		what := fmt.Sprintf("%d sequences", b.Missing())
		if b.Missing() == 1 {
			what = "1 sequence"
		}
		if ok && len(missing) > 0 {
			what = describeSeqs(unlisted(missing, removed))
		}
		return 0, nil, newLogError(ErrLogGap, "stream %s has a gap: %s missing (%s)", stream, what, describeBounds(b))
	}
	return b.Last, removed, nil
}

// unlisted returns the sequences of missing the removal ledger does not
// list.
func unlisted(missing []uint64, removed *events.SpanSet) []uint64 {
	return slices.DeleteFunc(missing, func(s uint64) bool { return removed.Covers(s, s) })
}

// listMissing lists the log's missing sequences if it can name them (a
// GapLister) and there are at most limit.
func listMissing(ctx context.Context, r events.StreamReader, limit int) ([]uint64, bool) {
	gl, ok := r.(events.GapLister)
	if !ok {
		return nil, false
	}
	missing, ok, err := gl.MissingSeqs(ctx, limit)
	return missing, ok && err == nil
}

// gapAt is the error of a bounded read that expected sequence expect and
// got got: expect..got-1 are not in the stream (purged while reading).
func gapAt(ctx context.Context, r events.StreamReader, stream string, expect, got uint64) error {
	state := fmt.Sprintf("next present %d", got)
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), infoTimeout)
	defer cancel()
	if b, err := r.Bounds(ictx); err == nil {
		state = describeBounds(b)
	}
	return newLogError(ErrLogGap, "stream %s has a gap: %s missing (%s)", stream, seqRange(expect, got-1), state)
}

// readFailed explains why a bounded read got no message while waiting for
// sequence expect: no message for idle (stalled), or the read failed with
// cause. The stream was deleted (ErrStreamNotFound), the sequence the read
// needs was purged meanwhile (ErrLogGap), or else the read stalled
// (ErrLogStalled) or failed.
//
// The sequence the read needs is the first at or after expect that the
// removal ledger does not list: a listed one is missing on purpose, so it
// never explains a read that got nothing (on a replicated stream a read
// can stall waiting for the first message after an erased head, and that
// is a stall, not a gap).
func readFailed(ctx context.Context, r events.StreamReader, stream string, removed *events.SpanSet, expect uint64, idle time.Duration, stalled bool, cause error) error {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), infoTimeout)
	defer cancel()
	expect = removed.NextUncovered(expect)
	b, err := bounds(ictx, r, stream)
	switch {
	case errors.Is(err, ErrStreamNotFound):
		return newLogError(ErrStreamNotFound, "stream %s was deleted while reading it (waiting for sequence %d)", stream, expect)
	case err != nil:
		if stalled {
			return newLogError(ErrLogStalled, "reading stream %s stalled: no message for %s while waiting for sequence %d (stream info: %v)",
				stream, idle, expect, err)
		}
		return fmt.Errorf("projections: read %s waiting for sequence %d: %w", stream, expect, cause)
	case expect < b.First:
		return newLogError(ErrLogGap, "stream %s has a gap: %s purged while reading it (%s)",
			stream, seqRange(expect, b.First-1), describeBounds(b))
	case expect <= b.Last && msgMissing(ictx, r, expect):
		return newLogError(ErrLogGap, "stream %s has a gap: sequence %d missing (%s)", stream, expect, describeBounds(b))
	case stalled:
		return newLogError(ErrLogStalled, "reading stream %s stalled: no message for %s while waiting for sequence %d (%s)",
			stream, idle, expect, describeBounds(b))
	}
	return fmt.Errorf("projections: read %s waiting for sequence %d: %w", stream, expect, cause)
}

// msgMissing reports whether the stream surely does not hold seq: a
// bounded read of seq alone returns nothing.
func msgMissing(ctx context.Context, r events.StreamReader, seq uint64) bool {
	cur, err := r.Read(ctx, seq, events.WithStop(seq))
	if err != nil {
		return false
	}
	defer cur.Close()
	_, err = cur.Next(ctx)
	return errors.Is(err, events.ErrEndOfRead)
}

// describeBounds is "first F, last L" (", no message left" when empty).
func describeBounds(b events.Bounds) string {
	s := fmt.Sprintf("first %d, last %d", b.First, b.Last)
	if b.Msgs == 0 {
		s += ", no message left"
	}
	return s
}

// seqRange is "sequence A" or "sequences A..B".
func seqRange(a, b uint64) string {
	if a == b {
		return fmt.Sprintf("sequence %d", a)
	}
	return fmt.Sprintf("sequences %d..%d", a, b)
}

// describeSeqs names missing sequences (sorted): all of them up to five,
// else their number and the first five.
func describeSeqs(del []uint64) string {
	switch len(del) {
	case 0:
		return "no sequence"
	case 1:
		return fmt.Sprintf("sequence %d", del[0])
	}
	const named = 5
	list := make([]string, 0, named)
	for _, s := range del[:min(len(del), named)] {
		list = append(list, fmt.Sprint(s))
	}
	if len(del) <= named {
		return "sequences " + strings.Join(list, ", ")
	}
	return fmt.Sprintf("%d sequences (%s, ...)", len(del), strings.Join(list, ", "))
}
