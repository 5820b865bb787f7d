package events

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consumers is the number of consumers the server holds on the log stream.
func consumers(t *testing.T, js jetstream.JetStream) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// TestJetStreamReadDeletesConsumer: when a read ends — closed after its
// last record, closed half way, ended by its context, or a Load — the
// server holds no consumer of it: none is left to the inactivity
// threshold.
func TestJetStreamReadDeletesConsumer(t *testing.T) {
	l, js := newTestJetStreamLog(t)
	ctx := context.Background()
	for i := range 20 {
		subject := SessionSubject(fmt.Sprintf("s%d", i%2))
		last, err := l.LastSeq(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctx, subject, last, fmt.Sprintf("m%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if n := consumers(t, js); n != 0 {
		t.Fatalf("%d consumers before any read", n)
	}
	read := func(name string, n int, opts ...ReadOption) {
		t.Helper()
		cur, err := l.Read(ctx, 1, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := cur.Next(ctx); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		cur.Close()
		cur.Close() // idempotent
		if c := consumers(t, js); c != 0 {
			t.Fatalf("%s: %d consumers after Close", name, c)
		}
	}
	read("a bounded read to its end", 10, WithStop(20), WithSubjects(SessionSubject("s1")))
	read("a bounded read closed half way", 5, WithStop(20))
	read("a read that follows the stream, closed", 20)

	// Ended by its context while waiting for a record not written yet.
	rctx, cancel := context.WithCancel(ctx)
	cur, err := l.Read(rctx, 21)
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := cur.Next(rctx); err == nil {
		t.Fatal("Next returned a record that was never written")
	}
	cur.Close()
	if c := consumers(t, js); c != 0 {
		t.Fatalf("a read ended by its context: %d consumers after Close", c)
	}

	// A read asked for with a context already ended creates nothing.
	if _, err := l.Read(rctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with an ended context: %v", err)
	}
	if _, err := l.Load(ctx, SessionSubject("s0"), 0, func(Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if c := consumers(t, js); c != 0 {
		t.Fatalf("%d consumers after a Load", c)
	}
}
