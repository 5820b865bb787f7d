package projections

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProjectorStreamDeleted deletes the stream under a running projector:
// Run returns on its own (it used to retry re-creating its consumer forever,
// deaf to its context) with an error wrapping ErrLogBehind, logged at error
// level with the stream name.
func TestProjectorStreamDeleted(t *testing.T) {
	js, log := testJS(t)
	l := newLogBuilder(t)
	l.create("s1", "u1", "")
	l.appendMsgs("s1", "hello")
	last := publish(t, log, l.recs)
	logs := &syncBuffer{}
	p, err := NewProjector(Config{}, js, openTestStore(t), testCodec, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := p.WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(wctx, events.StreamName); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrLogBehind) || !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("Run = %v, want ErrLogBehind and stream not found", err)
		}
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("Run still running 10s after the stream was deleted")
	}
	if s := logs.String(); !strings.Contains(s, `level=ERROR msg="projector stopped" stream=MEM`) {
		t.Fatalf("no error logged:\n%s", s)
	}
	if _, err := js.Stream(context.Background(), events.StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream after the projector stopped: %v, want not found", err)
	}
}

// TestProjectorRefusesShorterStream: a projector whose checkpoint is past
// the end of the stream (deleted and recreated empty) does not resume on it.
func TestProjectorRefusesShorterStream(t *testing.T) {
	js, log := testJS(t)
	l := newLogBuilder(t)
	l.create("s1", "u1", "")
	l.appendMsgs("s1", "hello", "again")
	last := publish(t, log, l.recs)
	store := openTestStore(t)
	p, err := NewProjector(Config{}, js, store, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runProjector(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, events.StreamName); err != nil {
		t.Fatal(err)
	}
	recreateStream(t, ctx, js)
	if _, err := CheckStream(ctx, js, events.StreamName, last); !errors.Is(err, ErrLogBehind) {
		t.Fatalf("CheckStream = %v, want ErrLogBehind", err)
	}
	err = p.Run(ctx)
	if !errors.Is(err, ErrLogBehind) || !strings.Contains(err.Error(), "ends at 0") {
		t.Fatalf("Run = %v, want ErrLogBehind", err)
	}
	if store.AppliedSeq() != last {
		t.Fatalf("AppliedSeq = %d, want %d", store.AppliedSeq(), last)
	}
}

// flakyJS fails its first ordered consumers with errs, one each, as a
// server that does not answer or a cluster without quorum for a while.
type flakyJS struct {
	jetstream.JetStream
	mu   sync.Mutex
	errs []error
}

func (f *flakyJS) OrderedConsumer(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	f.mu.Lock()
	var err error
	if len(f.errs) > 0 {
		err, f.errs = f.errs[0], f.errs[1:]
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.JetStream.OrderedConsumer(ctx, stream, cfg)
}

// TestProjectorRetriesTransientRead: a read that fails for the weather — the
// server does not answer, the cluster lost its quorum (JetStream "temporarily
// unavailable", 10008), the ordered consumer gave up recreating itself (its
// iterator closed) — is logged, reported by Problem, and tried again from
// the checkpoint; the projector then catches up by itself and Problem
// clears (issue 18, finding 7: it stopped for good on the last two).
func TestProjectorRetriesTransientRead(t *testing.T) {
	js, log := testJS(t)
	l := newLogBuilder(t)
	l.create("s1", "u1", "")
	l.appendMsgs("s1", "hello")
	last := publish(t, log, l.recs)
	logs := &syncBuffer{}
	weather := []error{
		nats.ErrTimeout,
		&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"},
		jetstream.ErrMsgIteratorClosed,
		nats.ErrConnectionReconnecting,
	}
	p, err := NewProjector(Config{}, &flakyJS{JetStream: js, errs: weather}, openTestStore(t), testCodec, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stop := runProjector(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for p.Problem() == "" && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(p.Problem(), "cannot read the log") {
		t.Fatalf("Problem = %q while reads fail", p.Problem())
	}
	p.Wake() // cuts a pause short: the test need not wait the backoff out
	if err := p.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if pr := p.Problem(); pr != "" {
		t.Fatalf("Problem = %q after the projector caught up", pr)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := strings.Count(logs.String(), "projector cannot read the log; trying again"); n != len(weather) {
		t.Fatalf("%d retries logged, want %d:\n%s", n, len(weather), logs.String())
	}
}

// errCodeStoreCreate is the server's "error creating store for stream".
const errCodeStoreCreate jetstream.ErrorCode = 10049

// recreateStream creates the log stream again right after it was deleted.
// The server may still be removing the deleted stream's store: a create
// then fails with 500 "error creating store for stream" (seen once in a
// clean-clone CI run), and is tried again for a while, as an operator
// would.
func recreateStream(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	for {
		_, err := events.NewJetStreamLog(ctx, js, events.DefaultJetStreamConfig())
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeStoreCreate || ctx.Err() != nil {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
