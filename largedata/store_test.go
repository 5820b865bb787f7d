package largedata

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// clock is a stepped clock for leases.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	js    jetstream.JetStream
	log   *events.JetStreamLog
	clock *clock
}

func newEnv(t testing.TB) *env {
	t.Helper()
	_, nc := natsembed.StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	log, err := events.NewJetStreamLog(context.Background(), js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &env{js: js, log: log, clock: newClock()}
}

func (e *env) store(t testing.TB, edit func(*Config)) *Store {
	t.Helper()
	cfg := DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(context.Background(), e.js, e.log, cfg, e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) objects(t testing.TB) jetstream.ObjectStore {
	t.Helper()
	obj, err := e.js.ObjectStore(context.Background(), DefaultConfig().Bucket)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// loadEvents decodes the batches on mem.ev.data.<id>.
func (e *env) loadEvents(t testing.TB, id string) ([]*memoryv1.EventBatch, []proto.Message) {
	t.Helper()
	codec := events.NewCodec()
	var batches []*memoryv1.EventBatch
	var evs []proto.Message
	_, err := e.log.Load(context.Background(), events.ScopeSubject(Kind, id), 0, func(r events.Record) error {
		b, err := events.DecodeBatch(r.Data)
		if err != nil {
			return err
		}
		msgs, err := codec.Unpack(b)
		if err != nil {
			return err
		}
		batches = append(batches, b)
		evs = append(evs, msgs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return batches, evs
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func compressible(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString("tool result line ")
		b.WriteString(strings.Repeat("x", i%13))
		b.WriteString(" ok\n")
	}
	return b.Bytes()[:n]
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(t, nil)
	durable := e.store(t, func(c *Config) { c.MemoryBytes = 0 }) // same bucket, no memory tier

	cases := []struct {
		name           string
		data           []byte
		wantCompressed bool
	}{
		{"1KB", compressible(1 << 10), false}, // below the threshold
		{"100KB-compressible", compressible(100 << 10), true},
		{"100KB-random", randomBytes(100 << 10), false}, // zstd would not be smaller
		{"10MB", compressible(10 << 20), true},
		{"10MB-random", randomBytes(10 << 20), false},
		{"empty", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			meta := map[string]string{"tool": "grep", "call": "c1"}
			start := e.clock.Now()
			ref, seq, err := s.Put(ctx, tc.data, "text/plain", meta, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if seq == 0 {
				t.Fatal("seq = 0")
			}
			if checkID(ref.GetId()) != nil {
				t.Fatalf("id %q is not 32 hex digits", ref.GetId())
			}
			if ref.GetSize() != uint64(len(tc.data)) || ref.GetSha256() != sha(tc.data) {
				t.Fatalf("size/sha = %d/%s, want %d/%s", ref.GetSize(), ref.GetSha256(), len(tc.data), sha(tc.data))
			}
			if ref.GetCompressed() != tc.wantCompressed {
				t.Fatalf("compressed = %v, want %v", ref.GetCompressed(), tc.wantCompressed)
			}
			if ref.GetCompressed() && ref.GetStoredSize() >= ref.GetSize() {
				t.Fatalf("compressed but stored %d >= size %d", ref.GetStoredSize(), ref.GetSize())
			}
			if !ref.GetCompressed() && ref.GetStoredSize() != ref.GetSize() {
				t.Fatalf("uncompressed but stored %d != size %d", ref.GetStoredSize(), ref.GetSize())
			}
			if ref.GetContentType() != "text/plain" || !maps.Equal(ref.GetMetadata(), meta) {
				t.Fatalf("content type/metadata = %q/%v", ref.GetContentType(), ref.GetMetadata())
			}
			if ref.GetStoredUnixNano() != start.UnixNano() || ref.GetExpiresUnixNano() != start.Add(time.Hour).UnixNano() {
				t.Fatalf("stored/expires = %d/%d", ref.GetStoredUnixNano(), ref.GetExpiresUnixNano())
			}
			info, err := e.objects(t).GetInfo(ctx, ref.GetId())
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != ref.GetStoredSize() {
				t.Fatalf("object size %d, stored_size %d", info.Size, ref.GetStoredSize())
			}

			for _, st := range []*Store{s, durable} {
				got, data, err := st.Get(ctx, ref.GetId())
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(data, tc.data) || !proto.Equal(got, ref) {
					t.Fatalf("round trip differs (len %d, want %d)", len(data), len(tc.data))
				}
			}

			batches, evs := e.loadEvents(t, ref.GetId())
			if len(batches) != 1 {
				t.Fatalf("%d batches, want 1", len(batches))
			}
			b := batches[0]
			if b.GetAggregateKind() != Kind || b.GetAggregateId() != ref.GetId() || b.GetVersion() != 1 ||
				b.GetCommandId() != ref.GetId() || b.GetSchemaVersion() != events.SchemaVersion {
				t.Fatalf("batch = %v", b)
			}
			stored, ok := evs[0].(*memoryv1.DataStored)
			if !ok || !proto.Equal(stored.GetRef(), ref) {
				t.Fatalf("event = %v, want DataStored{%v}", evs[0], ref)
			}
		})
	}
	if got := durable.MemoryBytes(); got != 0 {
		t.Fatalf("disabled tier holds %d bytes", got)
	}
	if got := s.MemoryBytes(); got == 0 {
		t.Fatal("memory tier empty after puts")
	}
}

func TestCallerCannotMutateStore(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(t, nil)
	data := []byte("hello")
	meta := map[string]string{"k": "v"}
	ref, _, err := s.Put(ctx, data, "text/plain", meta, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ref.GetExpiresUnixNano() != e.clock.Now().Add(DefaultConfig().DefaultTTL).UnixNano() {
		t.Fatal("ttl 0 did not use DefaultTTL")
	}
	data[0], meta["k"], ref.Sha256 = 'X', "changed", "bogus"
	got, b, err := s.Get(ctx, ref.GetId())
	if err != nil {
		t.Fatal(err)
	}
	b[1] = 'Y'
	got2, b2, err := s.Get(ctx, ref.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if string(b2) != "hello" || got.GetMetadata()["k"] != "v" || got2.GetSha256() != sha([]byte("hello")) {
		t.Fatalf("store state changed by the caller: %q %v %s", b2, got.GetMetadata(), got2.GetSha256())
	}
}

func TestRestart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(t, nil)
	data := compressible(200 << 10)
	ref, _, err := s.Put(ctx, data, "application/json", map[string]string{"a": "b"}, 0)
	if err != nil {
		t.Fatal(err)
	}

	fresh := e.store(t, nil) // a new process: empty memory tier
	if fresh.MemoryBytes() != 0 {
		t.Fatal("fresh store has a warm tier")
	}
	got, err := fresh.Ref(ctx, ref.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, ref) {
		t.Fatalf("Ref after restart = %v, want %v", got, ref)
	}
	got, b, err := fresh.Get(ctx, ref.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, data) || sha(b) != got.GetSha256() || !proto.Equal(got, ref) {
		t.Fatal("Get after restart returned other bytes or reference")
	}
	if fresh.MemoryBytes() != int64(len(data)) {
		t.Fatalf("durable read not cached: tier holds %d bytes", fresh.MemoryBytes())
	}
}

func TestCorruption(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(t, func(c *Config) { c.MemoryBytes = 0 })
	obj := e.objects(t)

	// tamper rewrites the object with altered bytes and the original
	// metadata (the reference with the original sha256).
	tamper := func(t *testing.T, id string, alter func([]byte) []byte) {
		t.Helper()
		info, err := obj.GetInfo(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := obj.GetBytes(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obj.Put(ctx, jetstream.ObjectMeta{Name: id, Metadata: info.Metadata}, bytes.NewReader(alter(raw))); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(b []byte) []byte { b[len(b)/2] ^= 0x01; return b }

	cases := []struct {
		name  string
		data  []byte
		alter func([]byte) []byte
	}{
		{"uncompressed-bitflip", randomBytes(10 << 10), flip},
		{"compressed-bitflip", compressible(100 << 10), flip},
		// Another valid zstd frame: decompresses fine, hashes differently.
		{"compressed-other-data", compressible(100 << 10), func([]byte) []byte {
			other := compressible(100 << 10)
			other[0] = 'Z'
			return s.enc.EncodeAll(other, nil)
		}},
		{"truncated", randomBytes(10 << 10), func(b []byte) []byte { return b[:len(b)-1] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref, _, err := s.Put(ctx, tc.data, "", nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			tamper(t, ref.GetId(), tc.alter)
			got, b, err := s.Get(ctx, ref.GetId())
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Get after tampering: err = %v, want ErrCorrupt", err)
			}
			if b != nil || got != nil {
				t.Fatal("corrupt read returned bytes or a reference")
			}
			if !strings.Contains(err.Error(), ref.GetId()) {
				t.Fatalf("error %q does not name the id", err)
			}
		})
	}

	t.Run("memory tier is cleared by a fresh store", func(t *testing.T) {
		warm := e.store(t, nil)
		ref, _, err := warm.Put(ctx, randomBytes(5000), "", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		tamper(t, ref.GetId(), flip)
		if _, _, err := warm.Get(ctx, ref.GetId()); err != nil {
			t.Fatalf("warm tier read: %v (bytes were verified when inserted)", err)
		}
		if _, b, err := e.store(t, nil).Get(ctx, ref.GetId()); !errors.Is(err, ErrCorrupt) || b != nil {
			t.Fatalf("fresh store: err = %v, %d bytes; want ErrCorrupt, none", err, len(b))
		}
	})

	t.Run("metadata removed", func(t *testing.T) {
		ref, _, err := s.Put(ctx, []byte("x"), "", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obj.PutBytes(ctx, ref.GetId(), []byte("x")); err != nil { // PutBytes drops the metadata
			t.Fatal(err)
		}
		if _, _, err := s.Get(ctx, ref.GetId()); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err = %v, want ErrCorrupt", err)
		}
	})
}

func TestTTLAndSweep(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(t, nil)

	short, storedSeq, err := s.Put(ctx, []byte("short lease"), "", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	long, _, err := s.Put(ctx, []byte("long lease"), "", nil, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("early sweep = %d, %v; want 0", n, err)
	}

	e.clock.Advance(time.Hour - time.Nanosecond)
	if _, _, err := s.Get(ctx, short.GetId()); err != nil {
		t.Fatalf("Get before the lease ends: %v", err)
	}
	e.clock.Advance(time.Nanosecond) // expires <= now
	if _, b, err := s.Get(ctx, short.GetId()); !errors.Is(err, ErrExpired) || b != nil {
		t.Fatalf("Get at the lease end: %v, %d bytes; want ErrExpired", err, len(b))
	}
	if _, err := s.Ref(ctx, short.GetId()); !errors.Is(err, ErrExpired) {
		t.Fatalf("Ref at the lease end: %v; want ErrExpired", err)
	}
	// Durable tier too (a store with no warm copy).
	if _, _, err := e.store(t, nil).Get(ctx, short.GetId()); !errors.Is(err, ErrExpired) {
		t.Fatalf("durable Get at the lease end: %v; want ErrExpired", err)
	}

	before := s.MemoryBytes()
	n, err := s.Sweep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1", n, err)
	}
	if got := s.MemoryBytes(); got != before-int64(short.GetSize()) {
		t.Fatalf("tier holds %d bytes after sweep, want %d", got, before-int64(short.GetSize()))
	}
	if _, _, err := s.Get(ctx, short.GetId()); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("Get after sweep: %v; want ErrExpired (removed)", err)
	}
	if _, err := e.objects(t).GetInfo(ctx, short.GetId()); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("object after sweep: %v; want not found", err)
	}
	if _, _, err := s.Get(ctx, long.GetId()); err != nil {
		t.Fatalf("unexpired data after sweep: %v", err)
	}

	batches, evs := e.loadEvents(t, short.GetId())
	if len(batches) != 2 {
		t.Fatalf("%d batches, want DataStored + DataExpired", len(batches))
	}
	if exp, ok := evs[1].(*memoryv1.DataExpired); !ok || exp.GetId() != short.GetId() || batches[1].GetVersion() != 2 || batches[1].GetCommandId() != expireCommand {
		t.Fatalf("second event = %v (version %d), want DataExpired{%s} version 2", evs[1], batches[1].GetVersion(), short.GetId())
	}
	last, err := e.log.LastSeq(ctx, events.ScopeSubject(Kind, short.GetId()))
	if err != nil || last <= storedSeq {
		t.Fatalf("last seq %d (err %v), DataStored at %d", last, err, storedSeq)
	}

	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep = %d, %v; want 0", n, err)
	}
	e.clock.Advance(time.Hour)
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep of the long lease = %d, %v; want 1", n, err)
	}
}

// TestSweepRecovery covers the two interrupted states the recovery rule
// names: DataExpired stored but the object not deleted, and an object whose
// DataStored event was never written.
func TestSweepRecovery(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(t, nil)

	ref, seq, err := s.Put(ctx, []byte("half expired"), "", nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// A sweep that stopped after its event.
	if _, err := s.appendEvent(ctx, ref.GetId(), seq, 2, expireCommand, expiredMsgID(ref.GetId()), &memoryv1.DataExpired{Id: ref.GetId()}); err != nil {
		t.Fatal(err)
	}

	// An orphan: the object, no event.
	orphan := &memoryv1.DataReference{Id: "0123456789abcdef0123456789abcdef", Size: 1, Sha256: sha([]byte("o")), StoredSize: 1,
		StoredUnixNano: e.clock.Now().UnixNano(), ExpiresUnixNano: e.clock.Now().Add(time.Minute).UnixNano()}
	enc, err := encodeRef(orphan)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.objects(t).Put(ctx, jetstream.ObjectMeta{Name: orphan.GetId(), Metadata: map[string]string{refMetaKey: enc}}, strings.NewReader("o")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := s.Get(ctx, orphan.GetId()); err != nil || string(b) != "o" {
		t.Fatalf("orphan readable until its lease ends: %q, %v", b, err)
	}

	e.clock.Advance(time.Minute)
	if n, err := s.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("sweep = %d, %v; want 2", n, err)
	}
	if batches, _ := e.loadEvents(t, ref.GetId()); len(batches) != 2 {
		t.Fatalf("%d batches, want 2 (no second DataExpired)", len(batches))
	}
	if batches, _ := e.loadEvents(t, orphan.GetId()); len(batches) != 0 {
		t.Fatalf("orphan got %d events, want none", len(batches))
	}
	// The swept reference's DataExpired says it expired; the orphan was
	// never recorded, so it is simply not found.
	if _, err := s.Ref(ctx, ref.GetId()); !errors.Is(err, ErrExpired) {
		t.Fatalf("Ref(%s) after sweep: %v; want ErrExpired", ref.GetId(), err)
	}
	if _, err := s.Ref(ctx, orphan.GetId()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Ref(%s) of the orphan after sweep: %v; want ErrNotFound", orphan.GetId(), err)
	}
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newEnv(t)
	s := e.store(t, func(c *Config) { c.SweepEvery = 5 * time.Millisecond })
	ref, _, err := s.Put(ctx, []byte("x"), "", nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	e.clock.Advance(time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Ref(ctx, ref.GetId())
		if errors.Is(err, ErrExpired) && strings.Contains(err.Error(), "removed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not sweep: Ref = %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(t, func(c *Config) { c.MaxBytes = 1000 })

	if _, _, err := s.Put(ctx, make([]byte, 1001), "", nil, 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Put 1001 bytes: %v; want ErrTooLarge", err)
	}
	if _, _, err := s.Put(ctx, make([]byte, 1000), "", nil, 0); err != nil {
		t.Fatalf("Put at the limit: %v", err)
	}
	if _, _, err := s.Put(ctx, nil, "", map[string]string{"big": strings.Repeat("m", maxRefBytes)}, 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Put with huge metadata: %v; want ErrTooLarge", err)
	}
	if _, _, err := s.Put(ctx, nil, "", nil, -time.Second); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Put with negative ttl: %v; want ErrInvalidArgument", err)
	}
	infos, err := e.objects(t).List(ctx)
	if err != nil || len(infos) != 1 {
		t.Fatalf("bucket holds %d objects (%v), want only the accepted one", len(infos), err)
	}

	for _, id := range []string{"0123456789abcdef0123456789abcdef", "nope", "../x", "", "0123456789ABCDEF0123456789ABCDEF"} {
		if _, _, err := s.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q): %v; want ErrNotFound", id, err)
		}
		if _, err := s.Ref(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Ref(%q): %v; want ErrNotFound", id, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.Bucket = "" },
		func(c *Config) { c.Bucket = "a.b" },
		func(c *Config) { c.Replicas = 0 },
		func(c *Config) { c.Replicas = 6 },
		func(c *Config) { c.MemoryBytes = -1 },
		func(c *Config) { c.DefaultTTL = 0 },
		func(c *Config) { c.MaxBytes = 0 },
		func(c *Config) { c.SweepEvery = 0 },
	}
	for i, edit := range bad {
		c := DefaultConfig()
		edit(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("case %d: %v; want ErrInvalidConfig", i, err)
		}
	}
}

func TestConcurrentPutGet(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(t, func(c *Config) { c.MemoryBytes = 64 << 10 }) // small: forces evictions
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				data := compressible(1000 * (g + i + 1))
				ref, _, err := s.Put(ctx, data, "", nil, 0)
				if err != nil {
					errs <- err
					return
				}
				_, got, err := s.Get(ctx, ref.GetId())
				if err != nil || !bytes.Equal(got, data) {
					errs <- errors.Join(err, errors.New("bytes differ"))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.mem.check(t)
}
