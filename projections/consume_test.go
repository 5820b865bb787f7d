package projections

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/events"
)

// TestConsumeBatchBytes: a batch ends once its records' data reach
// batchBytes, before batchMax records: every batch holds the records up to
// and including the one that reached the bound, and no record is skipped
// or read twice.
func TestConsumeBatchBytes(t *testing.T) {
	js, log := testJS(t)
	l := newLogBuilder(t)
	l.create("s1", "u1", "")
	for range 30 {
		l.appendMsgs("s1", "a message of some size, to be read in small batches")
	}
	last := publish(t, log, l.recs)
	sizes := map[uint64]int{} // as stored: the message data is the encoded batch
	for _, r := range l.recs {
		b, err := events.EncodeBatch(r.Batch)
		if err != nil {
			t.Fatal(err)
		}
		sizes[r.Seq] = len(b)
	}
	const bound = 500
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next := uint64(1)
	err := consume(ctx, readerOf(t, js), events.StreamName, testCodec, 1, last, 1, nil, 512, bound, time.Second, 10*time.Second, func(recs []Decoded) error {
		sum := 0
		for i, r := range recs {
			if r.Seq != next {
				t.Fatalf("record %d, want %d", r.Seq, next)
			}
			next++
			if i < len(recs)-1 {
				sum += sizes[r.Seq]
			}
		}
		if sum >= bound {
			t.Errorf("a batch of %d records went on after %d bytes (bound %d)", len(recs), sum, bound)
		}
		if end := recs[len(recs)-1].Seq; end < last && sum+sizes[end] < bound {
			t.Errorf("a batch of %d records ended at %d bytes, before the bound %d", len(recs), sum+sizes[end], bound)
		}
		return nil
	})
	if err != nil || next != last+1 {
		t.Fatalf("consume: %v, read up to %d of %d", err, next-1, last)
	}
}
