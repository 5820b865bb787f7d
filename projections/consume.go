package projections

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem/events"
)

// consume reads the log through r from startSeq and calls apply with
// batches of up to batchMax records (and, with batchBytes > 0, the first
// records whose data reach batchBytes), each applied at most wait after its
// first record arrived. With stopSeq > 0 it returns nil after applying
// stopSeq; otherwise it runs until ctx ends (returning ctx.Err()) or an
// error. stream names the log in errors.
//
// A bounded read (stopSeq > 0) expects every sequence from wholeFrom (at
// least startSeq) to stopSeq and never waits forever: sequences below
// wholeFrom may be missing (not asked for); a sequence
// missing from wholeFrom on is a gap (ErrLogGap, after the records before
// it are applied), and no message for idle while sequences are still
// expected ends it with the reason (readFailed: deleted stream, gap, else
// ErrLogStalled).
//
// A sequence the removal ledger lists (removed, nil for none) is never a
// gap: it was erased or compacted away on purpose.
func consume(ctx context.Context, r events.StreamReader, stream string, codec *events.Codec,
	startSeq, stopSeq, wholeFrom uint64, removed *events.SpanSet, batchMax, batchBytes int, wait, idle time.Duration, apply func([]Decoded) error) error {
	return consumeHurried(ctx, r, stream, codec, startSeq, stopSeq, wholeFrom, removed, batchMax, batchBytes, wait, idle, nil, apply)
}

// consumeHurried is consume whose batches end early when h says a reader
// waits for one of their records (nil: they never do).
func consumeHurried(ctx context.Context, r events.StreamReader, stream string, codec *events.Codec,
	startSeq, stopSeq, wholeFrom uint64, removed *events.SpanSet, batchMax, batchBytes int, wait, idle time.Duration, h *hurry, apply func([]Decoded) error) error {
	err := consumeRead(ctx, r, stream, codec, startSeq, stopSeq, max(wholeFrom, startSeq), removed, batchMax, batchBytes, wait, idle, h, apply)
	if errors.Is(err, errReadDone) {
		return nil
	}
	return err
}

// errReadDone ends a bounded read whose remaining sequences up to the stop
// are all below wholeFrom and not held: nothing more to read.
var errReadDone = errors.New("projections: bounded read done")

func consumeRead(ctx context.Context, r events.StreamReader, stream string, codec *events.Codec,
	startSeq, stopSeq, wholeFrom uint64, removed *events.SpanSet, batchMax, batchBytes int, wait, idle time.Duration, h *hurry, apply func([]Decoded) error) error {
	opts := []events.ReadOption{events.WithReadAhead(max(2*batchMax, 256))}
	if stopSeq > 0 {
		opts = append(opts, events.WithStop(stopSeq))
	}
	cur, err := r.Read(ctx, startSeq, opts...)
	if err != nil {
		if errors.Is(err, events.ErrNoStream) {
			return newLogError(ErrStreamNotFound, "stream %s not found", stream)
		}
		return fmt.Errorf("projections: read %s from %d: %w", stream, startSeq, err)
	}
	defer cur.Close()
	var (
		stalled atomic.Bool
		timer   *time.Timer
	)
	if stopSeq > 0 && idle > 0 {
		// Armed by read only while it waits.
		timer = time.AfterFunc(idle, func() { stalled.Store(true); cur.Close() })
		timer.Stop()
		defer timer.Stop()
	}
	expect := startSeq // the sequence a bounded read needs next
	// read returns the next record; the idle timer runs only while it
	// waits (not while apply works). A read ended by nctx returns its error
	// as is: the caller tells the batch window from ctx.
	read := func(nctx context.Context) (events.Record, error) {
		if timer != nil {
			timer.Reset(idle)
		}
		rec, err := cur.Next(nctx)
		if timer != nil {
			timer.Stop()
		}
		switch {
		case err == nil:
			return rec, nil
		case errors.Is(err, events.ErrEndOfRead) && !stalled.Load():
			if stopSeq < wholeFrom || removed.Covers(max(expect, wholeFrom), stopSeq) {
				return rec, errReadDone // expect..stopSeq may all be missing
			}
			return rec, readFailed(ctx, r, stream, removed, max(expect, wholeFrom), idle, false, err)
		case stalled.Load():
			return rec, readFailed(ctx, r, stream, removed, expect, idle, true, err)
		case nctx.Err() != nil:
			return rec, err
		case stopSeq > 0:
			return rec, readFailed(ctx, r, stream, removed, expect, idle, false, err)
		default:
			return rec, fmt.Errorf("projections: read %s after sequence %d: %w", stream, expect-1, err)
		}
	}
	// record decodes rec; in a bounded read it must be the expected
	// sequence, or every sequence skipped must be below wholeFrom.
	record := func(rec events.Record) (Decoded, error) {
		d, err := decodeRecord(stream, codec, rec)
		if err != nil {
			return d, err
		}
		if stopSeq > 0 && d.Seq != expect && d.Seq > wholeFrom && !removed.Covers(max(expect, wholeFrom), d.Seq-1) {
			return d, gapAt(ctx, r, stream, max(expect, wholeFrom), d.Seq)
		}
		expect = d.Seq + 1
		return d, nil
	}

	buf := make([]Decoded, 0, batchMax)
	var last uint64
	for {
		if stopSeq > 0 && last >= stopSeq {
			return nil
		}
		rec, err := read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		d, err := record(rec)
		if err != nil {
			return err
		}
		buf = append(buf[:0], d)
		last = d.Seq
		first := d.Seq
		var lastRead atomic.Uint64
		lastRead.Store(last)
		size := len(rec.Data)
		bctx, cancel := context.WithTimeout(ctx, wait)
		h.watch(bctx, first, &lastRead, cancel)
		for len(buf) < batchMax && (batchBytes == 0 || size < batchBytes) && (stopSeq == 0 || last < stopSeq) && !h.due(first, last) {
			rec, err := read(bctx)
			if err != nil {
				if bctx.Err() != nil && !stalled.Load() {
					break
				}
				cancel()
				if ctx.Err() != nil {
					return ctx.Err() // buffered records are not committed: read again next time
				}
				// Commit the good records read before it, then stop on it: the
				// error names the sequence after the last one applied.
				if aerr := applyBatch(stream, buf, apply); aerr != nil {
					return aerr
				}
				return err
			}
			d, err := record(rec)
			if err != nil {
				cancel()
				// Commit the good records before it, then stop on it.
				if aerr := applyBatch(stream, buf, apply); aerr != nil {
					return aerr
				}
				return err
			}
			buf = append(buf, d)
			last, size = d.Seq, size+len(rec.Data)
			lastRead.Store(last)
		}
		cancel()
		if ctx.Err() != nil {
			return ctx.Err() // buffered records are not committed: read again next time
		}
		if err := applyBatch(stream, buf, apply); err != nil {
			return err
		}
	}
}

func applyBatch(stream string, buf []Decoded, apply func([]Decoded) error) error {
	if len(buf) == 0 {
		return nil
	}
	if err := apply(buf); err != nil {
		var ae *ApplyError
		if errors.As(err, &ae) {
			ae.Stream = stream
		}
		return err
	}
	return nil
}

func decodeRecord(stream string, codec *events.Codec, rec events.Record) (Decoded, error) {
	d := Decoded{Seq: rec.Seq, Subject: rec.Subject}
	fail := func(err error) (Decoded, error) {
		return Decoded{}, &ApplyError{Stream: stream, Seq: d.Seq, Subject: d.Subject, Err: err}
	}
	kind, _, err := events.ParseSubject(d.Subject)
	if err != nil {
		return fail(err)
	}
	if !projectedKind(kind) {
		return d, nil // not projected (see Store.ApplyBatch)
	}
	if d.Batch, err = events.DecodeBatch(rec.Data); err != nil {
		return fail(err)
	}
	if d.Events, err = codec.Unpack(d.Batch); err != nil {
		return fail(err)
	}
	return d, nil
}
