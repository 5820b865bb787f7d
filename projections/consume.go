package projections

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// consume reads stream from startSeq with an ordered consumer and calls
// apply with batches of up to batchMax records (and, with batchBytes > 0,
// the first records whose data reach batchBytes), each applied at most
// wait after its first record arrived. With stopSeq > 0 it returns nil after
// applying stopSeq; otherwise it runs until ctx ends (returning ctx.Err())
// or an error.
//
// A bounded read (stopSeq > 0) expects every sequence from startSeq to
// stopSeq and never waits forever: a sequence skipped by the consumer is a
// gap (ErrLogGap, after the records before it are applied), and no message
// for idle while sequences are still expected ends it with the reason
// (readFailed: deleted stream, gap, else ErrLogStalled).
func consume(ctx context.Context, js jetstream.JetStream, stream string, codec *events.Codec,
	startSeq, stopSeq uint64, batchMax, batchBytes int, wait, idle time.Duration, apply func([]Decoded) error) error {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.SubjectPrefix + ".>"},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    startSeq,
	})
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return newLogError(ErrStreamNotFound, "stream %s not found", stream)
		}
		return fmt.Errorf("projections: ordered consumer on %s from %d: %w", stream, startSeq, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(max(2*batchMax, 256)))
	if err != nil {
		return fmt.Errorf("projections: read %s: %w", stream, err)
	}
	defer it.Stop()
	// While the ordered consumer recreates itself (after missed heartbeats,
	// or forever once the stream is gone) Next ignores its context; only
	// Stop ends it.
	defer context.AfterFunc(ctx, it.Stop)()
	var (
		stalled atomic.Bool
		timer   *time.Timer
	)
	if stopSeq > 0 && idle > 0 {
		// Armed by read only while it waits.
		timer = time.AfterFunc(idle, func() { stalled.Store(true); it.Stop() })
		timer.Stop()
		defer timer.Stop()
	}
	expect := startSeq // the sequence a bounded read needs next
	// read returns the next message; the idle timer runs only while it
	// waits (not while apply works). A read ended by nctx returns its error
	// as is: the caller tells the batch window from ctx.
	read := func(nctx context.Context) (jetstream.Msg, error) {
		if timer != nil {
			timer.Reset(idle)
		}
		msg, err := it.Next(jetstream.NextContext(nctx))
		if timer != nil {
			timer.Stop()
		}
		switch {
		case err == nil:
			return msg, nil
		case stalled.Load():
			return nil, readFailed(ctx, js, stream, expect, idle, true, err)
		case nctx.Err() != nil:
			return nil, err
		case stopSeq > 0:
			return nil, readFailed(ctx, js, stream, expect, idle, false, err)
		default:
			return nil, fmt.Errorf("projections: read %s after sequence %d: %w", stream, expect-1, err)
		}
	}
	// record decodes msg; in a bounded read it must be the expected sequence.
	record := func(msg jetstream.Msg) (Decoded, error) {
		d, err := decodeMsg(stream, codec, msg)
		if err != nil {
			return d, err
		}
		if stopSeq > 0 && d.Seq != expect {
			return d, gapAt(ctx, js, stream, expect, d.Seq)
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
		msg, err := read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		d, err := record(msg)
		if err != nil {
			return err
		}
		buf = append(buf[:0], d)
		last = d.Seq
		size := len(msg.Data())
		bctx, cancel := context.WithTimeout(ctx, wait)
		for len(buf) < batchMax && (batchBytes == 0 || size < batchBytes) && (stopSeq == 0 || last < stopSeq) {
			msg, err := read(bctx)
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
			d, err := record(msg)
			if err != nil {
				cancel()
				// Commit the good records before it, then stop on it.
				if aerr := applyBatch(stream, buf, apply); aerr != nil {
					return aerr
				}
				return err
			}
			buf = append(buf, d)
			last, size = d.Seq, size+len(msg.Data())
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

func decodeMsg(stream string, codec *events.Codec, msg jetstream.Msg) (Decoded, error) {
	md, err := msg.Metadata()
	if err != nil {
		return Decoded{}, fmt.Errorf("projections: %s message on %s without metadata: %w", stream, msg.Subject(), err)
	}
	d := Decoded{Seq: md.Sequence.Stream, Subject: msg.Subject()}
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
	if d.Batch, err = events.DecodeBatch(msg.Data()); err != nil {
		return fail(err)
	}
	if d.Events, err = codec.Unpack(d.Batch); err != nil {
		return fail(err)
	}
	return d, nil
}
