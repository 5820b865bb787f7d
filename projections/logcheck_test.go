package projections

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// interleavedLog publishes n records cycling over sessions (each created
// first): record i (from 0) is at sequence i+1 and belongs to
// sessions[i % len(sessions)]. It returns the stream and its last sequence.
func interleavedLog(t *testing.T, sessions []string, n int) (jetstream.JetStream, jetstream.Stream, uint64) {
	t.Helper()
	cfg := events.DefaultJetStreamConfig()
	cfg.DenyPurge = false // the cases purge to make gaps
	js, log := testJSWith(t, cfg)
	l := newLogBuilder(t)
	for i := range n {
		sid := sessions[i%len(sessions)]
		if i < len(sessions) {
			l.create(sid, "alice", "agent")
			continue
		}
		l.appendMsgs(sid, fmt.Sprintf("message %d about the quarterly figures", i))
	}
	last := publish(t, log, l.recs)
	s, err := js.Stream(context.Background(), events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	return js, s, last
}

// breakLog is a way to damage the log stream.
type breakLog func(ctx context.Context, js jetstream.JetStream, s jetstream.Stream) error

func purgeSession(sid string) breakLog {
	return func(ctx context.Context, _ jetstream.JetStream, s jetstream.Stream) error {
		return s.Purge(ctx, jetstream.WithPurgeSubject(events.SessionSubject(sid)))
	}
}

// purgeOne purges the one message at seq: the log stream denies deleting
// single messages, not purging a subject below a sequence.
func purgeOne(sid string, seq uint64) breakLog {
	return func(ctx context.Context, _ jetstream.JetStream, s jetstream.Stream) error {
		return s.Purge(ctx, jetstream.WithPurgeSubject(events.SessionSubject(sid)), jetstream.WithPurgeSequence(seq+1))
	}
}

// TestRebuildRefusesBrokenLog: a stream that does not hold every sequence
// from 1 to its last is refused before anything is written, saying what
// is missing. The tail case is the one that made `replay verify` wait
// forever for a purged last sequence.
func TestRebuildRefusesBrokenLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage breakLog
		kind   error
		want   string
	}{{
		name:   "one missing",
		damage: purgeOne("b", 2),
		kind:   ErrLogGap,
		want:   "projections: stream MEM has a gap: sequence 2 missing (first 1, last 30)",
	}, {
		name:   "subject in the middle",
		damage: purgeSession("b"),
		kind:   ErrLogGap,
		want:   "projections: stream MEM has a gap: 10 sequences (2, 5, 8, 11, 14, ...) missing (first 1, last 30)",
	}, {
		name:   "subject at the tail",
		damage: purgeSession("c"),
		kind:   ErrLogGap,
		want:   "projections: stream MEM has a gap: 10 sequences (3, 6, 9, 12, 15, ...) missing (first 1, last 30)",
	}, {
		name: "head purged",
		damage: func(ctx context.Context, _ jetstream.JetStream, s jetstream.Stream) error {
			return s.Purge(ctx, jetstream.WithPurgeKeep(10))
		},
		kind: ErrLogTruncated,
		want: "projections: stream MEM is truncated: sequences 1..20 purged (first 21, last 30)",
	}, {
		name: "all purged",
		damage: func(ctx context.Context, _ jetstream.JetStream, s jetstream.Stream) error {
			return s.Purge(ctx)
		},
		kind: ErrLogTruncated,
		want: "projections: stream MEM is truncated: sequences 1..30 purged (first 31, last 30, no message left)",
	}, {
		name: "deleted",
		damage: func(ctx context.Context, js jetstream.JetStream, _ jetstream.Stream) error {
			return js.DeleteStream(ctx, events.StreamName)
		},
		kind: ErrStreamNotFound,
		want: "projections: stream MEM not found",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			js, s, last := interleavedLog(t, []string{"a", "b", "c"}, 30)
			if last != 30 {
				t.Fatalf("last %d", last)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := tc.damage(ctx, js, s); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "p.db")
			_, err := Rebuild(ctx, js, events.StreamName, path, testCodec, nil, WithIdleTimeout(time.Second))
			if !errors.Is(err, tc.kind) {
				t.Fatalf("Rebuild = %v, want %v", err, tc.kind)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n %q, want\n %q", err, tc.want)
			}
			if fileExists(path) || fileExists(path+".rebuild") {
				t.Error("Rebuild of a broken log left a file")
			}
		})
	}
}

// readUpTo runs a bounded consume of the whole log up to stop with small
// batches and a short idle timeout; during calls apply (after each batch).
func readUpTo(t testing.TB, js jetstream.JetStream, stop uint64, idle time.Duration, during func(batch int) error) (applied uint64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := 0
	err = consume(ctx, readerOf(t, js), events.StreamName, testCodec, 1, stop, 1, nil, 8, 0, 20*time.Millisecond, idle, func(recs []Decoded) error {
		applied = recs[len(recs)-1].Seq
		n++
		if during != nil {
			return during(n)
		}
		return nil
	})
	return applied, err
}

// TestBoundedReadStalls: waiting for a sequence the stream does not hold
// ends after the idle timeout with ErrLogStalled naming it.
func TestBoundedReadStalls(t *testing.T) {
	js, _, last := interleavedLog(t, []string{"a"}, 20)
	began := time.Now()
	applied, err := readUpTo(t, js, last+5, 300*time.Millisecond, nil)
	if !errors.Is(err, ErrLogStalled) {
		t.Fatalf("consume = %v, want ErrLogStalled", err)
	}
	want := fmt.Sprintf("projections: reading stream MEM stalled: no message for 300ms while waiting for sequence %d (first 1, last %d)", last+1, last)
	if err.Error() != want {
		t.Errorf("error\n %q, want\n %q", err, want)
	}
	if applied != last {
		t.Errorf("applied up to %d before stalling, want %d", applied, last)
	}
	t.Logf("ended after %v", time.Since(began).Round(time.Millisecond))
}

// TestBoundedReadStreamDeleted: the stream deleted while it is read ends
// the read (the ordered consumer would retry forever) with
// ErrStreamNotFound naming the sequence waited for.
func TestBoundedReadStreamDeleted(t *testing.T) {
	js, _, last := interleavedLog(t, []string{"a", "b"}, 1000)
	began := time.Now()
	applied, err := readUpTo(t, js, last, 300*time.Millisecond, func(batch int) error {
		if batch == 1 {
			return js.DeleteStream(context.Background(), events.StreamName)
		}
		return nil
	})
	if !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("consume = %v, want ErrStreamNotFound", err)
	}
	if want := fmt.Sprintf("projections: stream MEM was deleted while reading it (waiting for sequence %d)", applied+1); err.Error() != want {
		t.Errorf("error\n %q, want\n %q", err, want)
	}
	t.Logf("ended at sequence %d of %d after %v", applied, last, time.Since(began).Round(time.Millisecond))
}

// TestBoundedReadPurgedWhileReading: a subject purged while the log is read
// is a gap where the read meets it; the records before it are applied.
func TestBoundedReadPurgedWhileReading(t *testing.T) {
	js, s, last := interleavedLog(t, []string{"a", "b"}, 1000)
	applied, err := readUpTo(t, js, last, 5*time.Second, func(batch int) error {
		if batch == 1 {
			return s.Purge(context.Background(), jetstream.WithPurgeSubject(events.SessionSubject("b")))
		}
		return nil
	})
	if !errors.Is(err, ErrLogGap) {
		t.Fatalf("consume = %v, want ErrLogGap", err)
	}
	// Session b holds the even sequences: the first one not read is missing.
	want := fmt.Sprintf("projections: stream MEM has a gap: sequence %d missing (first 1, last %d)", applied+1, last)
	if applied%2 != 1 || err.Error() != want {
		t.Errorf("applied up to %d; error\n %q, want\n %q", applied, err, want)
	}
	if !strings.Contains(err.Error(), "has a gap") {
		t.Error(err)
	}
}

// stallFirstRead is a StreamReader whose first Read delivers nothing (a
// replica's consumer that lost its pull): its cursor waits until closed.
// Every later Read, and Bounds, go to the log.
type stallFirstRead struct {
	*events.MemLog
	reads int
}

func (s *stallFirstRead) Read(ctx context.Context, from uint64, opts ...events.ReadOption) (events.Cursor, error) {
	s.reads++
	if s.reads > 1 {
		return s.MemLog.Read(ctx, from, opts...)
	}
	return stalledCursor{done: make(chan struct{})}, nil
}

type stalledCursor struct{ done chan struct{} }

func (c stalledCursor) Next(ctx context.Context) (events.Record, error) {
	select {
	case <-c.done:
		return events.Record{}, errors.New("read closed")
	case <-ctx.Done():
		return events.Record{}, ctx.Err()
	}
}

func (c stalledCursor) Close() {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
}

// TestBoundedReadStallAfterErasedHead: a read that stalls waiting for the
// first message of a log whose head was erased (the removal ledger lists
// it) is a stall waiting for the first message kept, never a gap at the
// erased head: `replay verify` on a cluster called an erased session's
// sequence 1 missing when its read had stalled.
func TestBoundedReadStallAfterErasedHead(t *testing.T) {
	ctx := context.Background()
	log := events.NewMemLog()
	l := newLogBuilder(t)
	l.create("gone", "alice", "agent")
	l.appendMsgs("gone", "erased words")
	l.create("kept", "bob", "agent")
	l.appendMsgs("kept", "kept words")
	lastBySubj := map[string]uint64{}
	var last uint64
	for _, r := range l.recs {
		data, err := events.EncodeBatch(r.Batch)
		if err != nil {
			t.Fatal(err)
		}
		res, err := log.Append(ctx, r.Subject, lastBySubj[r.Subject], "", data)
		if err != nil {
			t.Fatal(err)
		}
		lastBySubj[r.Subject], last = res.Seq, res.Seq
	}
	if err := log.RemoveSubject(ctx, events.SessionSubject("gone"), lastBySubj[events.SessionSubject("gone")]); err != nil {
		t.Fatal(err)
	}
	var removed events.SpanSet
	removed.Add(events.SeqSpan{First: 1, Last: 2})

	err := consume(ctx, &stallFirstRead{MemLog: log}, events.StreamName, testCodec, 1, last, 1, &removed, 8, 0, 20*time.Millisecond, 200*time.Millisecond,
		func([]Decoded) error { return nil })
	if !errors.Is(err, ErrLogStalled) {
		t.Fatalf("consume = %v, want ErrLogStalled", err)
	}
	want := fmt.Sprintf("projections: reading stream MEM stalled: no message for 200ms while waiting for sequence 3 (first 3, last %d)", last)
	if err.Error() != want {
		t.Errorf("error\n %q, want\n %q", err, want)
	}
}
