package projections

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

const testLogPartitions = 6

// partitionedJS starts an embedded server with the log in k streams.
func partitionedJS(t testing.TB, k int) (jetstream.JetStream, *events.PartitionedLog) {
	t.Helper()
	_, nc := natsembed.StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, err := events.NewPartitionedLog(ctx, js, events.DefaultJetStreamConfig(), k)
	if err != nil {
		t.Fatal(err)
	}
	return js, log
}

// publishTo appends the records' batches to log and returns each
// partition's last sequence.
func publishTo(t testing.TB, log *events.PartitionedLog, recs []Decoded) []uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lastBySubj := map[string]uint64{}
	lasts := make([]uint64, log.Partitions())
	for _, r := range recs {
		if r.Batch == nil {
			continue
		}
		data, err := events.EncodeBatch(r.Batch)
		if err != nil {
			t.Fatal(err)
		}
		res, err := log.Append(ctx, r.Subject, lastBySubj[r.Subject], r.Batch.CommandId, data)
		if err != nil {
			t.Fatal(err)
		}
		lastBySubj[r.Subject] = res.Seq
		p, _ := log.PartitionOf(r.Subject)
		lasts[p] = res.Seq
	}
	return lasts
}

// partitionedFixture is a log of several users' sessions spread over
// every partition of six, each message created at its batch's time (as
// the actors write them: in the log's order).
func partitionedFixture(t testing.TB) *logBuilder {
	l := newLogBuilder(t)
	l.batchTime = true
	for s := range 18 {
		sid, user := fmt.Sprintf("s%d", s), fmt.Sprintf("u%d", s%3)
		l.create(sid, user, "agent-1")
	}
	for round := range 4 {
		for s := range 18 {
			sid := fmt.Sprintf("s%d", s)
			l.appendMsgs(sid, fmt.Sprintf("round %d of %s: the blue door code is %d", round, sid, 100*s+round),
				fmt.Sprintf("noted, %s keeps the timeout at %d seconds", sid, round+s))
		}
	}
	return l
}

// TestProjectorPartitionsEqualsOneStream: the same log projected live
// from six partition streams and from the one stream, each record applied
// before the next is written, answers recall, session lists and search
// (session and user scope) alike; each partition's checkpoint is its
// stream's last sequence, kept across a reopen. Projected again from the
// whole log at once (a catch-up: the partitions' records interleave in
// any order) they still agree, user-scope search included: it orders the
// sessions' messages by their created time (search_age.go), which the
// fixture's batches give in the log's order, as the actors do.
func TestProjectorPartitionsEqualsOneStream(t *testing.T) {
	l := partitionedFixture(t)
	js1, log1 := partitionedJS(t, 1)
	js6, log6 := partitionedJS(t, testLogPartitions)
	one, p1 := startProjection(t, js1, 1)
	six, p6 := startProjection(t, js6, testLogPartitions)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	last1 := make([]uint64, 1)
	last6 := make([]uint64, testLogPartitions)
	for _, r := range l.recs {
		for _, x := range []struct {
			log   *events.PartitionedLog
			p     *Projector
			lasts []uint64
		}{{log1, p1, last1}, {log6, p6, last6}} {
			part, seq := publishOne(t, ctx, x.log, r)
			x.lasts[part] = seq
			if err := x.p.WaitForAll(ctx, x.lasts); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, last := range last6 {
		if last == 0 {
			t.Fatalf("partition %d holds nothing: the fixture does not spread", i)
		}
		if got := six.AppliedSeqOf(i); got != last {
			t.Fatalf("partition %d applied %d, want %d", i, got, last)
		}
	}
	if got, want := p6.AppliedSeq(), minOf(last6); got != want {
		t.Fatalf("AppliedSeq = %d, want the least checkpoint %d", got, want)
	}
	if one.AppliedSeq() != last1[0] || one.LogPartitions() != 1 || six.LogPartitions() != testLogPartitions {
		t.Fatalf("one stream applied %d of %d; partitions %d and %d", one.AppliedSeq(), last1[0], one.LogPartitions(), six.LogPartitions())
	}
	compareProjections(t, one, six)

	// Reopened, the store keeps each partition's checkpoint.
	path := six.Path()
	if err := six.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for i := range testLogPartitions {
		if got := again.AppliedSeqOf(i); got != last6[i] {
			t.Fatalf("reopened: partition %d applied %d, want %d", i, got, last6[i])
		}
	}
	if again.LogPartitions() != testLogPartitions {
		t.Fatalf("reopened: %d partitions", again.LogPartitions())
	}

	// A new projection from the whole log at once.
	caught, pc := startProjection(t, js6, testLogPartitions)
	if err := pc.WaitForAll(ctx, last6); err != nil {
		t.Fatal(err)
	}
	compareProjections(t, one, caught)
}

// startProjection runs a projector of k partitions over js into a new
// store.
func startProjection(t *testing.T, js jetstream.JetStream, k int) (*Store, *Projector) {
	t.Helper()
	store := openTestStore(t)
	if err := store.SetLogPartitions(k); err != nil {
		t.Fatal(err)
	}
	p, err := NewProjector(Config{Partitions: k, BatchEvents: 7}, js, store, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}
	runProjector(t, p)
	return store, p
}

// publishOne appends one record's batch after its subject's last sequence
// and returns its partition and sequence.
func publishOne(t testing.TB, ctx context.Context, log *events.PartitionedLog, r Decoded) (int, uint64) {
	t.Helper()
	data, err := events.EncodeBatch(r.Batch)
	if err != nil {
		t.Fatal(err)
	}
	prev, err := log.LastSeq(ctx, r.Subject)
	if err != nil {
		t.Fatal(err)
	}
	res, err := log.Append(ctx, r.Subject, prev, r.Batch.CommandId, data)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := log.PartitionOf(r.Subject)
	return part, res.Seq
}

// compareProjections compares the answers of two projections of the
// fixture, search in session and user scope.
func compareProjections(t *testing.T, one, other *Store) {
	t.Helper()
	scopes := []memoryv1.SearchScope{memoryv1.SearchScope_SEARCH_SCOPE_SESSION, memoryv1.SearchScope_SEARCH_SCOPE_USER}
	for s := range 18 {
		sid := fmt.Sprintf("s%d", s)
		m1, n1, err1 := one.Recall(sid, 0, 50)
		m6, n6, err6 := other.Recall(sid, 0, 50)
		if err1 != nil || err6 != nil || n1 != 8 || n1 != n6 || !sameMessages(m1, m6) {
			t.Fatalf("Recall(%s): %d vs %d messages (%v, %v)", sid, n1, n6, err1, err6)
		}
		for _, scope := range scopes {
			h1, err1 := one.Search(sid, scope, "blue door code", 10)
			h6, err6 := other.Search(sid, scope, "blue door code", 10)
			if err1 != nil || err6 != nil || len(h1) == 0 || !sameHits(h1, h6) {
				t.Fatalf("Search(%s, %s): %d vs %d hits (%v, %v)", sid, scope, len(h1), len(h6), err1, err6)
			}
		}
	}
	for u := range 3 {
		req := &memoryv1.ListSessionsRequest{UserId: fmt.Sprintf("u%d", u), Limit: 100}
		l1, _, err1 := one.ListSessions(req)
		l6, _, err6 := other.ListSessions(req)
		if err1 != nil || err6 != nil || len(l1) != 6 || len(l1) != len(l6) {
			t.Fatalf("ListSessions(u%d): %d vs %d (%v, %v)", u, len(l1), len(l6), err1, err6)
		}
		for i := range l1 {
			if l1[i].GetSessionId() != l6[i].GetSessionId() {
				t.Fatalf("ListSessions(u%d)[%d]: %s vs %s", u, i, l1[i].GetSessionId(), l6[i].GetSessionId())
			}
		}
	}
}

// TestProjectorPartitionsFollows: records appended while the projector
// runs are applied in their partition; WaitForAll waits for them.
func TestProjectorPartitionsFollows(t *testing.T) {
	js, log := partitionedJS(t, testLogPartitions)
	store := openTestStore(t)
	if err := store.SetLogPartitions(testLogPartitions); err != nil {
		t.Fatal(err)
	}
	p, err := NewProjector(Config{Partitions: testLogPartitions}, js, store, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}
	runProjector(t, p)
	l := partitionedFixture(t)
	lasts := publishTo(t, log, l.recs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitForAll(ctx, lasts); err != nil {
		t.Fatal(err)
	}
	if lag, err := p.Lag(ctx); err != nil || lag != 0 {
		t.Fatalf("Lag = %d, %v", lag, err)
	}
	if _, n, err := store.Recall("s17", 0, 50); err != nil || n != 8 {
		t.Fatalf("Recall(s17) = %d, %v", n, err)
	}
	short, scancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer scancel()
	future := append([]uint64(nil), lasts...)
	future[4] += 100
	if err := p.WaitForAll(short, future); !errors.Is(err, ErrNotCaughtUp) {
		t.Fatalf("WaitForAll(future) = %v, want ErrNotCaughtUp", err)
	}
}

// TestProjectorPartitionsRefusesOtherFiles: a projection of the one stream
// is not continued from partitions, nor one of six from one stream.
func TestProjectorPartitionsRefusesOtherFiles(t *testing.T) {
	js6, _ := partitionedJS(t, testLogPartitions)
	fresh := openTestStore(t)
	if _, err := NewProjector(Config{Partitions: testLogPartitions}, js6, fresh, testCodec, nil); !errors.Is(err, ErrLogPartitions) {
		t.Fatalf("6 partitions into a file recording 1: %v, want ErrLogPartitions", err)
	}
	used := openTestStore(t)
	l := newLogBuilder(t)
	l.create("s1", "u1", "")
	mustApply(t, used, l.recs)
	if err := used.SetLogPartitions(testLogPartitions); !errors.Is(err, ErrLogPartitions) {
		t.Fatalf("SetLogPartitions(6) on a file of the one stream: %v", err)
	}
	six := openTestStore(t)
	if err := six.SetLogPartitions(testLogPartitions); err != nil {
		t.Fatal(err)
	}
	if err := six.SetLogPartitions(1); !errors.Is(err, ErrLogPartitions) {
		t.Fatalf("SetLogPartitions(1) on a file of six: %v", err)
	}
	js1, _ := testJS(t)
	if _, err := NewProjector(Config{}, js1, six, testCodec, nil); !errors.Is(err, ErrLogPartitions) {
		t.Fatalf("one stream into a file of six: %v, want ErrLogPartitions", err)
	}
}

func minOf(xs []uint64) uint64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}

func sameMessages(a, b []*memoryv1.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameHits(a, b []*memoryv1.SearchHit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].GetSessionId() != b[i].GetSessionId() || a[i].GetMessage().GetId() != b[i].GetMessage().GetId() {
			return false
		}
	}
	return true
}

// BenchmarkReadYourWrite: one append, then the wait until the projection
// applied it (WaitFor with one stream, WaitForAll with six partitions),
// beside the append alone ("raw-append", the engine's figure).
func BenchmarkReadYourWrite(b *testing.B) {
	for _, k := range []int{0, 1, testLogPartitions} {
		name := fmt.Sprintf("partitions=%d", k)
		if k == 0 {
			name = "raw-append"
		}
		b.Run(name, func(b *testing.B) {
			js, log := partitionedJS(b, max(k, 1))
			var p *Projector
			if k > 0 {
				store := openTestStore(b)
				if err := store.SetLogPartitions(k); err != nil {
					b.Fatal(err)
				}
				var err error
				if p, err = NewProjector(Config{Partitions: k}, js, store, testCodec, nil); err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- p.Run(ctx) }()
				b.Cleanup(func() { cancel(); <-done })
			}
			l := newLogBuilder(b)
			for s := range 30 {
				l.create(fmt.Sprintf("s%d", s), "u1", "")
			}
			ctx := context.Background()
			targets := make([]uint64, max(k, 1))
			for _, r := range l.recs {
				part, seq := publishOne(b, ctx, log, r)
				targets[part] = seq
			}
			if p != nil {
				if err := p.WaitForAll(ctx, targets); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				sid := fmt.Sprintf("s%d", i%30)
				l.recs = l.recs[:0]
				l.appendMsgs(sid, "a message to read back")
				part, seq := publishOne(b, ctx, log, l.recs[0])
				switch {
				case p == nil:
				case k == 1:
					if err := p.WaitFor(ctx, seq); err != nil {
						b.Fatal(err)
					}
				default:
					targets[part] = seq
					if err := p.WaitForAll(ctx, targets); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestRebuildPartitions: a projection rebuilt from six partition streams
// holds each partition's checkpoint and answers recall, lists and session
// search as the live one does.
func TestRebuildPartitions(t *testing.T) {
	js, log := partitionedJS(t, testLogPartitions)
	lasts := publishTo(t, log, partitionedFixture(t).recs)
	live, p := startProjection(t, js, testLogPartitions)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitForAll(ctx, lasts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rebuilt.db")
	var calls int
	stats, err := RebuildPartitions(ctx, js, events.StreamName, testLogPartitions, path, testCodec, func(applied, total uint64) {
		calls++
		if applied > total {
			t.Errorf("progress(%d, %d)", applied, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, l := range lasts {
		sum += l
	}
	if stats.Events != sum || calls == 0 {
		t.Fatalf("stats %+v (progress calls %d), want %d events", stats, calls, sum)
	}
	rebuilt, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	if rebuilt.LogPartitions() != testLogPartitions {
		t.Fatalf("rebuilt file records %d partitions", rebuilt.LogPartitions())
	}
	for i, l := range lasts {
		if got := rebuilt.AppliedSeqOf(i); got != l {
			t.Fatalf("rebuilt partition %d checkpoint %d, want %d", i, got, l)
		}
	}
	compareProjections(t, live, rebuilt)
	if _, err := RebuildPartitions(ctx, js, events.StreamName, testLogPartitions, path, testCodec, nil, WithUpTo(3)); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("WithUpTo: %v, want ErrInvalidConfig", err)
	}
	if _, err := RebuildPartitions(ctx, js, events.StreamName, testLogPartitions, path, testCodec, nil, WithUpToPartitions([]uint64{1, 2})); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("WithUpToPartitions of two: %v, want ErrInvalidConfig", err)
	}
	// Each partition up to its own bound (past its end: its end).
	upTo := make([]uint64, testLogPartitions)
	for i, l := range lasts {
		upTo[i] = l / 2
	}
	upTo[1] = lasts[1] + 10
	part := filepath.Join(t.TempDir(), "part.db")
	if _, err := RebuildPartitions(ctx, js, events.StreamName, testLogPartitions, part, testCodec, nil, WithUpToPartitions(upTo)); err != nil {
		t.Fatal(err)
	}
	bounded, err := Open(part)
	if err != nil {
		t.Fatal(err)
	}
	defer bounded.Close()
	for i := range testLogPartitions {
		if got, want := bounded.AppliedSeqOf(i), min(upTo[i], lasts[i]); got != want {
			t.Fatalf("bounded rebuild: partition %d checkpoint %d, want %d", i, got, want)
		}
	}
}
