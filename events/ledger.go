package events

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Removal is one removal of the ledger (KindRemoval).
type Removal struct {
	*memoryv1.LogRemoval
	// Seq is the stream sequence of the LogRemoval record.
	Seq uint64
	// Time is the time the stream stored the LogRemoval record at.
	Time time.Time
	// Completed: its LogRemovalCompleted is in the log.
	Completed bool
}

// Ledger is the removal ledger read from the log.
type Ledger struct {
	Removals []*Removal // in log order
	// Removed holds every sequence a removal lists.
	Removed SpanSet
	// Last is the last log sequence the read covered.
	Last uint64
}

// Pending returns the removals not completed, in log order.
func (l *Ledger) Pending() []*Removal {
	var out []*Removal
	for _, r := range l.Removals {
		if !r.Completed {
			out = append(out, r)
		}
	}
	return out
}

// ReadLedger reads the removal ledger of the log up to sequence upTo (0:
// the log's last sequence now).
func ReadLedger(ctx context.Context, r StreamReader, upTo uint64) (*Ledger, error) {
	return ReadLedgerFrom(ctx, r, 1, upTo)
}

// ReadLedgerFrom is ReadLedger of the records from sequence from on (a
// completion whose removal is before from is left out): the node's
// resumption reads only what came after its last pass.
func ReadLedgerFrom(ctx context.Context, r StreamReader, from, upTo uint64) (*Ledger, error) {
	led := &Ledger{}
	if upTo == 0 {
		b, err := r.Bounds(ctx)
		if err != nil {
			return nil, err
		}
		upTo = b.Last
	}
	led.Last = upTo
	if upTo == 0 || from > upTo {
		return led, nil
	}
	cur, err := r.Read(ctx, max(from, 1), WithStop(upTo), WithSubjects(RemovalSubjects))
	if err != nil {
		return nil, err
	}
	defer cur.Close()
	byID := make(map[string]*Removal)
	for {
		rec, err := cur.Next(ctx)
		if errors.Is(err, ErrEndOfRead) {
			return led, nil
		}
		if err != nil {
			return nil, fmt.Errorf("events: read the removal ledger: %w", err)
		}
		rm, done, err := DecodeRemoval(rec.Data)
		if err != nil {
			return nil, fmt.Errorf("events: removal ledger record %d on %s: %w", rec.Seq, rec.Subject, err)
		}
		switch {
		case rm != nil:
			r := &Removal{LogRemoval: rm, Seq: rec.Seq, Time: rec.Time}
			byID[rm.GetId()] = r
			led.Removals = append(led.Removals, r)
			led.Removed.Add(RemovedSpans(rm)...)
		case done != nil:
			if r := byID[done.GetId()]; r != nil {
				r.Completed = true
			}
		}
	}
}

// RemovedSpans returns the sequences a removal lists.
func RemovedSpans(rm *memoryv1.LogRemoval) []SeqSpan {
	out := make([]SeqSpan, 0, len(rm.GetRemoved()))
	for _, r := range rm.GetRemoved() {
		out = append(out, SeqSpan{r.GetFirst(), r.GetLast()})
	}
	return out
}

// DecodeRemoval decodes a removal ledger record: a LogRemoval, or a
// LogRemovalCompleted (one of the two is set).
func DecodeRemoval(data []byte) (*memoryv1.LogRemoval, *memoryv1.LogRemovalCompleted, error) {
	b, err := DecodeBatch(data)
	if err != nil {
		return nil, nil, err
	}
	if len(b.GetEvents()) != 1 {
		return nil, nil, fmt.Errorf("%w: a removal batch holds %d events, not 1", ErrMalformed, len(b.GetEvents()))
	}
	a := b.GetEvents()[0]
	switch {
	case a.MessageIs(&memoryv1.LogRemoval{}):
		rm := &memoryv1.LogRemoval{}
		return rm, nil, unpackAny(a, rm)
	case a.MessageIs(&memoryv1.LogRemovalCompleted{}):
		done := &memoryv1.LogRemovalCompleted{}
		return nil, done, unpackAny(a, done)
	}
	return nil, nil, fmt.Errorf("%w: unexpected event %s in the removal ledger", ErrMalformed, a.GetTypeUrl())
}

func unpackAny(a *anypb.Any, m proto.Message) error {
	if err := a.UnmarshalTo(m); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// RemovalSpans converts spans to the ledger's ranges.
func RemovalSpans(spans []SeqSpan) []*memoryv1.SeqRange {
	out := make([]*memoryv1.SeqRange, len(spans))
	for i, s := range spans {
		out[i] = &memoryv1.SeqRange{First: s.First, Last: s.Last}
	}
	return out
}

// PlannedRemovalID is the removal id of item of the erase request whose
// plan is removal id (LogRemoval.planned).
func PlannedRemovalID(id, item string) string {
	h := sha256.Sum256([]byte(item))
	return id + "-" + hex.EncodeToString(h[:8])
}

// AppendRemoval records rm (its id names the subject) as the first
// message of its removal subject and returns its sequence; recorded
// already (a retry), it returns the stored one's.
func AppendRemoval(ctx context.Context, l Log, codec *Codec, rm *memoryv1.LogRemoval, now time.Time) (uint64, error) {
	return appendLedger(ctx, l, codec, rm.GetId(), 0, rm.GetId(), rm, now)
}

// CompleteRemoval records the completion of removal id, recorded at
// sequence removalSeq, and returns the completion's sequence.
func CompleteRemoval(ctx context.Context, l Log, codec *Codec, id string, removalSeq uint64, now time.Time) (uint64, error) {
	return appendLedger(ctx, l, codec, id, removalSeq, id+".done", &memoryv1.LogRemovalCompleted{Id: id, AtUnixNano: now.UnixNano()}, now)
}

func appendLedger(ctx context.Context, l Log, codec *Codec, id string, expected uint64, msgID string, ev proto.Message, now time.Time) (uint64, error) {
	if err := ValidateID("removal id", id); err != nil {
		return 0, err
	}
	packed, err := codec.Pack([]proto.Message{ev})
	if err != nil {
		return 0, err
	}
	version := uint64(1)
	if expected > 0 {
		version = 2
	}
	data, err := EncodeBatch(&memoryv1.EventBatch{
		CommandId: msgID, AggregateKind: KindRemoval, AggregateId: id, Version: version,
		TimeUnixNano: now.UnixNano(), SchemaVersion: SchemaVersion, Events: packed,
	})
	if err != nil {
		return 0, err
	}
	res, err := l.Append(ctx, RemovalSubject(id), expected, "removal."+msgID, data)
	if err != nil {
		return 0, fmt.Errorf("events: record removal %s: %w", id, err)
	}
	return res.Seq, nil
}

// IsPlannedRemoval reports whether removalID is the removal of item of some
// erase request's plan (PlannedRemovalID).
func IsPlannedRemoval(removalID, item string) bool {
	return strings.HasSuffix(removalID, PlannedRemovalID("", item))
}

// RemovalRecords is what one removal subject holds.
type RemovalRecords struct {
	Removal             *memoryv1.LogRemoval
	RemovalSeq, DoneSeq uint64
}

// LoadRemoval reads removal id's records (none: a zero RemovalRecords).
func LoadRemoval(ctx context.Context, l Log, id string) (RemovalRecords, error) {
	var out RemovalRecords
	_, err := l.Load(ctx, RemovalSubject(id), 0, func(rec Record) error {
		rm, done, err := DecodeRemoval(rec.Data)
		switch {
		case err != nil:
			return err
		case rm != nil:
			out.Removal, out.RemovalSeq = rm, rec.Seq
		case done != nil:
			out.DoneSeq = rec.Seq
		}
		return nil
	})
	return out, err
}

// LedgerRouter is a log in partitions (or what wraps one): the records of
// a removal of one aggregate's messages go to that aggregate's stream, not
// to the stream the removal id's hash names.
type LedgerRouter interface {
	// LedgerLog is the log of the stream holding subject.
	LedgerLog(subject string) (Log, error)
}

// LedgerLogOf is the log the ledger records of a removal of subject's
// messages are read from and written to: l's stream of subject when l is a
// LedgerRouter, l itself otherwise (the log in one stream).
func LedgerLogOf(l Log, subject string) (Log, error) {
	if r, ok := l.(LedgerRouter); ok {
		return r.LedgerLog(subject)
	}
	return l, nil
}
