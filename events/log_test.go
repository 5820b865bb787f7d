package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/nats-io/nats.go/jetstream"
)

func TestMemLogConformance(t *testing.T) {
	RunLogConformance(t, func(t *testing.T) Log { return NewMemLog() })
}

func TestJetStreamLogConformance(t *testing.T) {
	RunLogConformance(t, func(t *testing.T) Log {
		l, _ := newTestJetStreamLog(t)
		return l
	})
}

func newTestJetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	_, nc := natsembed.StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func newTestJetStreamLog(t testing.TB) (*JetStreamLog, jetstream.JetStream) {
	t.Helper()
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := NewJetStreamLog(ctx, js, DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	return l, js
}

func TestJetStreamConfigValidate(t *testing.T) {
	if err := DefaultJetStreamConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*JetStreamConfig){
		"empty stream":  func(c *JetStreamConfig) { c.Stream = "" },
		"dotted stream": func(c *JetStreamConfig) { c.Stream = "a.b" },
		"replicas 0":    func(c *JetStreamConfig) { c.Replicas = 0 },
		"replicas 7":    func(c *JetStreamConfig) { c.Replicas = 7 },
		"no window":     func(c *JetStreamConfig) { c.DuplicateWindow = 0 },
		"bad storage":   func(c *JetStreamConfig) { c.Storage = 9 },
	} {
		c := DefaultJetStreamConfig()
		mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestJetStreamLogStreamConfig(t *testing.T) {
	l, js := newTestJetStreamLog(t)
	ctx := context.Background()
	st, err := js.Stream(ctx, l.Stream())
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.Name != StreamName || len(cfg.Subjects) != 1 || cfg.Subjects[0] != "mem.ev.>" ||
		cfg.Storage != jetstream.FileStorage || cfg.Duplicates != 2*time.Minute || !cfg.AllowDirect {
		t.Fatalf("stream config: %+v", cfg)
	}
	// A second log on the same stream (another node, a restart) updates in place.
	if _, err := NewJetStreamLog(ctx, js, DefaultJetStreamConfig()); err != nil {
		t.Fatalf("reopen: %v", err)
	}
}

// TestJetStreamLogHeaders checks the wire format: the expectation header is
// sent even when it is 0, and the msgID is the Nats-Msg-Id.
func TestJetStreamLogHeaders(t *testing.T) {
	l, js := newTestJetStreamLog(t)
	ctx := context.Background()
	subj := SessionSubject("h")
	res, err := l.Append(ctx, subj, 0, "cmd-h", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := js.Stream(ctx, StreamName)
	m, err := st.GetMsg(ctx, res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(jetstream.MsgIDHeader) != "cmd-h" {
		t.Fatalf("headers: %v", m.Header)
	}
}

// TestJetStreamLoadManyBatches loads a tail larger than one direct-get batch
// in messages and in bytes.
func TestJetStreamLoadManyBatches(t *testing.T) {
	l, _ := newTestJetStreamLog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	check := func(subj string, n, size int) {
		var last uint64
		var seqs []uint64
		for i := range n {
			data := bytes.Repeat([]byte{byte(i)}, size)
			res, err := l.Append(ctx, subj, last, fmt.Sprintf("%s-%d", subj, i), data)
			if err != nil {
				t.Fatal(err)
			}
			last = res.Seq
			seqs = append(seqs, last)
		}
		i := 0
		got, err := l.Load(ctx, subj, 0, func(r Record) error {
			if r.Seq != seqs[i] || len(r.Data) != size || (size > 0 && r.Data[0] != byte(i)) {
				t.Fatalf("%s record %d: seq %d len %d", subj, i, r.Seq, len(r.Data))
			}
			i++
			return nil
		})
		if err != nil || i != n || got != last {
			t.Fatalf("%s: Load = %d, %v after %d records; want %d, nil after %d", subj, got, err, i, last, n)
		}
	}
	check(SessionSubject("big"), 12, 1<<20)        // 12 MiB: several 4 MiB batches
	check(SessionSubject("many"), loadBatch+10, 8) // more messages than one batch
}

// TestJetStreamLoadBoundedByLeaderLastSeq checks that messages appended after
// Load read the last sequence are not delivered by that Load.
func TestJetStreamLoadBoundedByLeaderLastSeq(t *testing.T) {
	l, _ := newTestJetStreamLog(t)
	ctx := context.Background()
	subj := SessionSubject("grow")
	var last uint64
	for i := range 5 {
		res, err := l.Append(ctx, subj, last, fmt.Sprint(i), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		last = res.Seq
	}
	bound := last
	n := 0
	got, err := l.Load(ctx, subj, 0, func(r Record) error {
		n++
		if n == 1 { // append while loading
			res, err := l.Append(ctx, subj, last, "during", []byte("late"))
			if err != nil {
				return err
			}
			last = res.Seq
		}
		if r.Seq > bound {
			return fmt.Errorf("delivered seq %d past the bound %d", r.Seq, bound)
		}
		return nil
	})
	if err != nil || got != bound || n != 5 {
		t.Fatalf("Load = %d, %v, %d records; want %d, nil, 5", got, err, n, bound)
	}
}

// TestJetStreamLoadLeavesNoConsumer: every Load deletes its consumer, also
// when the callback fails or the context is cancelled.
func TestJetStreamLoadLeavesNoConsumer(t *testing.T) {
	l, js := newTestJetStreamLog(t)
	ctx := context.Background()
	subj := SessionSubject("c")
	var last uint64
	for i := range 3 {
		res, err := l.Append(ctx, subj, last, fmt.Sprint(i), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		last = res.Seq
	}
	if _, err := l.Load(ctx, subj, 0, func(Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	if _, err := l.Load(ctx, subj, 0, func(Record) error { return stop }); !errors.Is(err, stop) {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	if _, err := l.Load(cctx, subj, 0, func(Record) error { cancel(); return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with cancelled context = %v", err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Fatalf("%d consumers left after Load", info.State.Consumers)
	}
}

// TestJetStreamAppendUnknownOutcome: with no stream answering, the outcome
// of a write is unknown, never "failed".
func TestJetStreamAppendUnknownOutcome(t *testing.T) {
	l, js := newTestJetStreamLog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, StreamName); err != nil {
		t.Fatal(err)
	}
	_, err := l.Append(ctx, SessionSubject("s"), 0, "c", []byte("x"))
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("Append without a stream = %v, want ErrUnknownOutcome", err)
	}
	short, cancel2 := context.WithTimeout(ctx, time.Millisecond)
	defer cancel2()
	<-short.Done()
	if _, err := l.Append(short, SessionSubject("s"), 0, "c", []byte("x")); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("Append with an expired context = %v, want ErrUnknownOutcome", err)
	}
}

func TestKVSnapshotStore(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := NewKVSnapshotStore(ctx, js, SnapshotBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	key := SnapshotKey(KindSession, "s1")
	if key != "session.s1" {
		t.Fatalf("SnapshotKey = %q", key)
	}
	if _, ok, err := s.Get(ctx, key); ok || err != nil {
		t.Fatalf("Get(missing) = %v, %v", ok, err)
	}
	for i := range 3 {
		if err := s.Put(ctx, key, fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := s.Get(ctx, key)
	if err != nil || !ok || string(got) != "v2" {
		t.Fatalf("Get = %q, %v, %v; want v2", got, ok, err)
	}
	kv, err := js.KeyValue(ctx, SnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.History() != 1 || st.Values() != 1 {
		t.Fatalf("bucket keeps %d values with history %d; want 1 and 1", st.Values(), st.History())
	}
}

func TestMemLogReaderConformance(t *testing.T) {
	RunReaderConformance(t, func(t *testing.T) ReaderFixture {
		l := NewMemLog()
		return ReaderFixture{
			Log: l, Reader: l,
			DeleteMsg:   func(_ context.Context, seq uint64) error { return l.DeleteMsg(seq) },
			PurgeBefore: func(_ context.Context, seq uint64) error { return l.PurgeBefore(seq) },
		}
	})
}

func TestJetStreamLogReaderConformance(t *testing.T) {
	RunReaderConformance(t, func(t *testing.T) ReaderFixture {
		l, s := newDeletableJetStreamLog(t)
		return ReaderFixture{
			Log: l, Reader: l,
			DeleteMsg: func(ctx context.Context, seq uint64) error { return s.DeleteMsg(ctx, seq) },
			PurgeBefore: func(ctx context.Context, seq uint64) error {
				return s.Purge(ctx, jetstream.WithPurgeSequence(seq))
			},
		}
	})
}

// newDeletableJetStreamLog is a JetStream log on a test stream that allows
// deleting and purging messages (the production stream denies both), opened
// without NewJetStreamLog, which would turn deny_delete on.
func newDeletableJetStreamLog(t testing.TB) (*JetStreamLog, jetstream.Stream) {
	t.Helper()
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	sc := cfg.StreamConfig()
	sc.DenyDelete, sc.DenyPurge = false, false
	s, err := js.CreateStream(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenJetStreamLog(js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, s
}

// TestOpenJetStreamLogMissingStream: reading a stream that does not exist
// says so (ErrNoStream) and creates nothing.
func TestOpenJetStreamLogMissingStream(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := OpenJetStreamLog(js, DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Bounds(ctx); !errors.Is(err, ErrNoStream) {
		t.Fatalf("Bounds = %v, want ErrNoStream", err)
	}
	if _, err := l.Read(ctx, 1); !errors.Is(err, ErrNoStream) {
		t.Fatalf("Read = %v, want ErrNoStream", err)
	}
	if _, err := js.Stream(ctx, StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the stream exists after reading: %v", err)
	}
}
