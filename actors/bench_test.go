package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Benchmarks of the session actors on a real embedded NATS
// (natsembed.StartForTest: in this process, loopback, one replica, file
// storage, no fsync per write). The harness of actors_test.go takes a
// *testing.T, so these build their directories with benchEnv.

// benchEnv is one embedded server with the log, and the collaborators a
// Directory needs.
type benchEnv struct {
	js    jetstream.JetStream
	log   *events.JetStreamLog
	codec *events.Codec
	tok   segmented.Tokenizer
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	_, nc := natsembed.StartForTest(b)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	log, err := events.NewJetStreamLog(context.Background(), js, events.DefaultJetStreamConfig())
	if err != nil {
		b.Fatal(err)
	}
	tok, err := segmented.NewTokenizer()
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{js: js, log: log, codec: events.NewCodec(), tok: tok}
}

// bucket returns a snapshot store on KV bucket name (created if needed).
func (e *benchEnv) bucket(b *testing.B, name string) *events.KVSnapshotStore {
	b.Helper()
	s, err := events.NewKVSnapshotStore(context.Background(), e.js, name, 1)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// newDir starts a directory on the log with snaps; closed by b.Cleanup.
func (e *benchEnv) newDir(b *testing.B, snaps events.SnapshotStore, mutate func(*Config)) *Directory {
	b.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	d, err := New(cfg, Deps{
		Log: e.log, Snapshots: snaps, Codec: e.codec, Tokenizer: e.tok,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { benchClose(b, d) })
	return d
}

func benchClose(b *testing.B, d *Directory) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		b.Errorf("close directory: %v", err)
	}
}

// benchCall dispatches body to session id and waits for the reply.
func benchCall(d *Directory, id string, body proto.Message) (proto.Message, error) {
	type result struct {
		m   proto.Message
		err error
	}
	ch := make(chan result, 1)
	if err := d.Dispatch(id, nil, body, func(m proto.Message, err error) { ch <- result{m, err} }); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("no reply for %T on %s", body, id)
	}
}

func benchMust(b *testing.B, d *Directory, id string, body proto.Message) proto.Message {
	b.Helper()
	m, err := benchCall(d, id, body)
	if err != nil {
		b.Fatalf("%T on %s: %v", body, id, err)
	}
	return m
}

// benchPassivate makes the actor of id snapshot (through d's store) and
// stop, as the idle timeout would, and returns once it left the directory:
// the next request for id spawns a new actor that recovers.
func benchPassivate(b *testing.B, d *Directory, id string) {
	b.Helper()
	key := sessionKey(id)
	d.mu.Lock()
	pid, ok := d.pids[key]
	d.mu.Unlock()
	if !ok {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	d.send(pid, &passivate{done: &wg})
	wg.Wait()
	d.mu.Lock()
	_, still := d.pids[key]
	d.mu.Unlock()
	if still {
		b.Fatalf("session %s is still in the directory after passivation", id)
	}
}

// localProcesses counts the processes registered in d's actor system.
func localProcesses(d *Directory) int {
	n := 0
	for _, m := range d.system.ProcessRegistry.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}

// readOnlySnapshots reads snapshots from a store and drops every write, so
// passivating during a benchmark never changes what the next activation
// finds. It counts the snapshots it found.
type readOnlySnapshots struct {
	events.SnapshotStore
	found atomic.Int64
}

func (s *readOnlySnapshots) Get(ctx context.Context, key string) ([]byte, bool, error) {
	data, ok, err := s.SnapshotStore.Get(ctx, key)
	if ok {
		s.found.Add(1)
	}
	return data, ok, err
}

func (*readOnlySnapshots) Put(context.Context, string, []byte) error { return nil }

func (s *readOnlySnapshots) foundCount() int64 { return s.found.Load() }

// snapshotCounter is a snapshot store that counts the snapshots it found.
type snapshotCounter interface {
	events.SnapshotStore
	foundCount() int64
}

// countingSnapshots counts the snapshots it found and keeps every write.
type countingSnapshots struct {
	events.SnapshotStore
	found atomic.Int64
}

func (s *countingSnapshots) Get(ctx context.Context, key string) ([]byte, bool, error) {
	data, ok, err := s.SnapshotStore.Get(ctx, key)
	if ok {
		s.found.Add(1)
	}
	return data, ok, err
}

func (s *countingSnapshots) foundCount() int64 { return s.found.Load() }

// benchMessage is the i-th message of a benchmark session: alternately a
// user question and an assistant answer, about 200 bytes (~45 tokens).
func benchMessage(i int) *memoryv1.MessageInput {
	role, text := memoryv1.Role_ROLE_USER, "how many orders did Alice place in region %d last quarter, and how does that compare with Bob's orders in the same region? Include refunds."
	if i%2 == 1 {
		role, text = memoryv1.Role_ROLE_ASSISTANT, "Alice placed %d orders in that region last quarter, twelve more than Bob; refunds were four percent of revenue, mostly in the second month."
	}
	return &memoryv1.MessageInput{Role: role, Content: fmt.Sprintf("%04d ", i) + fmt.Sprintf(text, i%97)}
}

func benchPercentiles(b *testing.B, lat []time.Duration) {
	b.Helper()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	b.ReportMetric(float64(pct(0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(pct(0.99).Microseconds()), "p99-µs")
}

// errStopReplay stops a Load once the snapshot version is reached.
var errStopReplay = errors.New("stop replay")

// BenchmarkColdActivation1000 is the first request to a passivated session
// whose log holds 1,000 batches (a create and 999 one-message appends of ~45
// tokens; the default 128k budget holds them all, so nothing compressed and
// L1 is 999 messages long: the largest state to rebuild per batch).
//
// Each op passivates the actor (untimed), then times a GetSessionRequest:
// spawn, snapshot lookup (KV get), the log tail (events.JetStreamLog.Load:
// leader last-seq, ephemeral consumer, fetch, delete), replay, reply.
//
//   - no-snapshot: the snapshot bucket is empty: replay all 1,000 batches.
//   - with-snapshot: a snapshot at version 901 (what SnapshotEvery=100 leaves
//     at worst: 99 batches of tail), then replay the 99.
//   - raw-load, raw-load-tail99: events.JetStreamLog.Load of the same 1,000
//     (or 99) records alone, from the same stream.
//
// Passivation writes a snapshot: these directories read snapshots from
// their bucket but drop writes, so every op recovers the same way.
func BenchmarkColdActivation1000(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	const id = "cold"
	subject := events.SessionSubject(id)
	noSnaps := &readOnlySnapshots{SnapshotStore: e.bucket(b, "BENCH_NO_SNAPSHOTS")}
	snaps := e.bucket(b, "BENCH_SNAPSHOTS")

	w := e.newDir(b, noSnaps, func(c *Config) { c.SnapshotEvery = 1 << 40 })
	benchMust(b, w, id, &memoryv1.CreateSessionRequest{SystemPrompt: "You are a data assistant."})
	for i := range 999 {
		rep := benchMust(b, w, id, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{benchMessage(i)}}).(*memoryv1.AppendReply)
		if rep.GetCompressions() != 0 {
			b.Fatalf("append %d compressed", i)
		}
	}
	benchPassivate(b, w, id)

	// The snapshot at version 901, and the stream sequence the tail follows.
	state := segmented.New()
	if _, err := e.log.Load(ctx, subject, 0, func(r events.Record) error {
		if _, _, err := replayRecord(e.codec, sessionModel{state}, r); err != nil {
			return err
		}
		if state.Version() == 901 {
			return errStopReplay
		}
		return nil
	}); !errors.Is(err, errStopReplay) {
		b.Fatalf("building the snapshot: %v", err)
	}
	snapData, err := deterministic.Marshal(state.Snapshot())
	if err != nil {
		b.Fatal(err)
	}
	if err := snaps.Put(ctx, "session."+id, snapData); err != nil {
		b.Fatal(err)
	}
	snapSeq := state.LastSeq()
	b.Logf("log: 1,000 batches; snapshot at version 901: %d bytes", len(snapData))

	activate := func(b *testing.B, store snapshotCounter) {
		d := e.newDir(b, store, func(c *Config) { c.SnapshotEvery = 100 })
		before := store.foundCount()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			benchPassivate(b, d, id)
			b.StartTimer()
			start := time.Now()
			rep, err := benchCall(d, id, &memoryv1.GetSessionRequest{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			if v := rep.(*memoryv1.GetSessionReply).GetSession().GetVersion(); v != 1000 {
				b.Fatalf("recovered version %d, want 1000", v)
			}
		}
		b.StopTimer()
		benchPercentiles(b, lat)
		b.ReportMetric(float64(store.foundCount()-before)/float64(b.N), "snapshots-used/op")
	}
	b.Run("no-snapshot", func(b *testing.B) {
		activate(b, noSnaps)
	})
	b.Run("with-snapshot", func(b *testing.B) {
		activate(b, &readOnlySnapshots{SnapshotStore: snaps})
	})
	// The usual case: passivation wrote a snapshot at the last version, so
	// activation reads it and finds an empty tail.
	b.Run("after-passivation", func(b *testing.B) {
		activate(b, &countingSnapshots{SnapshotStore: e.bucket(b, "BENCH_PASSIVATED")})
	})

	load := func(b *testing.B, after uint64, want int) {
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			n := 0
			start := time.Now()
			_, err := e.log.Load(ctx, subject, after, func(events.Record) error { n++; return nil })
			lat = append(lat, time.Since(start))
			if err != nil || n != want {
				b.Fatalf("Load: %d records, %v; want %d", n, err, want)
			}
		}
		b.StopTimer()
		benchPercentiles(b, lat)
	}
	b.Run("raw-load", func(b *testing.B) { load(b, 0, 1000) })
	b.Run("raw-load-tail99", func(b *testing.B) { load(b, snapSeq, 99) })
}

// BenchmarkIdleSessionMemory creates 2,000 sessions with 10 one-message
// appends each (~200 bytes a message), leaves their actors active and idle,
// and reports the heap in use per session (runtime.MemStats.HeapInuse after
// runtime.GC):
//
//   - B/session: growth from before the sessions were created to after. The
//     embedded NATS server runs in this process, so this includes what the
//     server holds for the 22,000 stored batches (file store caches).
//   - actor-B/session: what passivating all 2,000 actors gives back: the
//     state, actor, mailbox and directory entry of an idle active session.
//   - live-B/session, actor-live-B/session: the same with HeapAlloc (bytes of
//     live objects), without the partly used spans HeapInuse also counts.
//
// Each op does the whole thing once; run it with -benchtime=1x.
func BenchmarkIdleSessionMemory(b *testing.B) {
	const sessions, messages, workers = 2000, 10, 16
	e := newBenchEnv(b)
	d := e.newDir(b, &readOnlySnapshots{SnapshotStore: e.bucket(b, "BENCH_NO_SNAPSHOTS")}, nil)
	var inuse, actorInuse, live, actorLive float64
	for round := range b.N {
		before, beforeLive := heapNow()

		var next atomic.Int64
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= sessions {
						return
					}
					id := fmt.Sprintf("idle-%d-%d", round, i)
					if _, err := benchCall(d, id, &memoryv1.CreateSessionRequest{UserId: "u1", SystemPrompt: "You are a data assistant."}); err != nil {
						errs <- err
						return
					}
					for j := range messages {
						if _, err := benchCall(d, id, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{benchMessage(j)}}); err != nil {
							errs <- err
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		if n := d.Active(); n != sessions {
			b.Fatalf("%d active actors, want %d", n, sessions)
		}
		active, activeLive := heapNow()

		b.StopTimer()
		// The actor processes, less the sessions' (the guardian is spawned
		// with the first session and stays).
		want := localProcesses(d) - sessions
		for i := range sessions {
			benchPassivate(b, d, fmt.Sprintf("idle-%d-%d", round, i))
		}
		deadline := time.Now().Add(10 * time.Second)
		for localProcesses(d) > want {
			if time.Now().After(deadline) {
				b.Fatalf("%d actor processes still registered after passivation, want %d", localProcesses(d), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		passive, passiveLive := heapNow()
		b.StartTimer()

		inuse += (active - before) / sessions
		actorInuse += (active - passive) / sessions
		live += (activeLive - beforeLive) / sessions
		actorLive += (activeLive - passiveLive) / sessions
	}
	n := float64(b.N)
	b.ReportMetric(inuse/n, "B/session")
	b.ReportMetric(actorInuse/n, "actor-B/session")
	b.ReportMetric(live/n, "live-B/session")
	b.ReportMetric(actorLive/n, "actor-live-B/session")
}

// heapNow returns HeapInuse and HeapAlloc after two collections (the
// second frees what finalizers of the first released).
func heapNow() (inuse, alloc float64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse), float64(ms.HeapAlloc)
}
