package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// erasePartitions is K of the erase tests with the log in partitions.
const erasePartitions = 6

// partitionedEraseConfig is a node with the log in erasePartitions
// streams (no bounded log) and the inspector's /healthz.
func partitionedEraseConfig(c *node.Config) {
	c.LogPartitions = erasePartitions
	c.LogWindow = 0
	c.HTTPAddr = "127.0.0.1:0"
}

// newPartitionedEraseFixture is newEraseFixture with the log in
// erasePartitions streams.
func newPartitionedEraseFixture(t *testing.T) *eraseFixture {
	t.Helper()
	f := newEraseFixtureWith(t, partitionedEraseConfig)
	f.partitioned = true
	return f
}

// partitionedLog opens the K streams of the node's log.
func partitionedLog(t *testing.T, js jetstream.JetStream) *events.PartitionedLog {
	t.Helper()
	l, err := events.OpenPartitionedLog(js, events.DefaultJetStreamConfig(), erasePartitions)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// partitionsHold returns the stream and subject of every message of
// every stream (the K log streams, the snapshots' bucket, ...) holding
// marker; it fails when a log stream is missing (the check would pass on
// nothing).
func partitionsHold(t *testing.T, ctx context.Context, js jetstream.JetStream, marker string) []string {
	t.Helper()
	for i := range erasePartitions {
		if _, err := js.Stream(ctx, events.PartitionStream(events.StreamName, i, erasePartitions)); err != nil {
			t.Fatalf("log partition %d: %v", i, err)
		}
	}
	return streamsHold(t, ctx, js, marker)
}

// partitionLedgers reads the removal ledger of each partition stream.
func partitionLedgers(t *testing.T, ctx context.Context, l *events.PartitionedLog) []*events.Ledger {
	t.Helper()
	out := make([]*events.Ledger, l.Partitions())
	for i := range out {
		led, err := events.ReadLedger(ctx, l.Partition(i), 0)
		if err != nil {
			t.Fatalf("ledger of partition %d: %v", i, err)
		}
		out[i] = led
	}
	return out
}

// checkLedgerPerPartition checks that every removal naming an erased
// aggregate is recorded in that aggregate's partition stream, its spans
// sequences of that stream, and that none is pending; it returns how many
// removals name an erased aggregate.
func checkLedgerPerPartition(t *testing.T, leds []*events.Ledger) int {
	t.Helper()
	n := 0
	for i, led := range leds {
		for _, rm := range led.Removals {
			if !rm.Completed {
				t.Errorf("partition %d: removal %s (%v) pending", i, rm.GetId(), rm.GetErased())
			}
			for _, agg := range rm.GetErased() {
				n++
				_, id, _ := strings.Cut(agg, ".")
				if p := events.LogPartition(id, erasePartitions); p != i {
					t.Errorf("removal %s of %s is in partition %d, want its aggregate's %d", rm.GetId(), agg, i, p)
				}
			}
		}
	}
	return n
}

// TestErasePartitionsSessionAndUser is TestEraseSessionAndUser with the
// log in six partitions: erasing a session makes it unreadable on every
// read path and leaves its markers in no stream (log partitions,
// snapshots); erasing its user reaches the user's other sessions and
// scope and nothing of another user; each aggregate's removal is in the
// ledger of its own partition stream, completed; /healthz answers 200.
func TestErasePartitionsSessionAndUser(t *testing.T) {
	f := newPartitionedEraseFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if held := partitionsHold(t, ctx, f.js, "quokkaone"); len(held) == 0 {
		t.Fatal("the marker is not in the log before the erase (the check could not fail)")
	}
	rc, err := f.c.EraseSession(ctx, "s1", "user asked")
	if err != nil {
		t.Fatalf("erase s1: %v", err)
	}
	if rc.GetRemovalId() == "" || rc.GetMessages() == 0 || len(rc.GetSessions()) != 1 || len(rc.GetData()) != 1 {
		t.Fatalf("receipt %v", rc)
	}
	if _, _, err := f.c.GetData(ctx, rc.GetData()[0]); client.Code(err) != 404 {
		t.Errorf("the session's large data after the erase: %v, want 404", err)
	}
	f.unreadable(t, "s1", "u1", "quokkaone", "s2")
	for _, id := range []string{"s2", "s3"} {
		if cx, err := f.c.Context(ctx, id); err != nil || len(cx.GetMessages()) == 0 {
			t.Fatalf("context %s after erasing s1: %v", id, err)
		}
	}
	if _, err := f.c.EraseSession(ctx, "s1", ""); client.Code(err) != 404 {
		t.Errorf("second erase of s1: %v, want 404", err)
	}

	rc, err = f.c.EraseUser(ctx, "u1", "account closed")
	if err != nil {
		t.Fatalf("erase u1: %v", err)
	}
	if len(rc.GetSessions()) != 1 || rc.GetSessions()[0] != "s2" || len(rc.GetScopes()) != 1 {
		t.Fatalf("user receipt %v", rc)
	}
	f.unreadable(t, "s2", "u1", "quokkatwo", "s3")
	if _, err := f.c.GetEntry(ctx, client.User("u1"), "pref-s1", 0); client.Code(err) != 404 {
		t.Errorf("user:u1 entry after erase: %v, want 404", err)
	}
	for _, m := range []string{"quokkaone", "prefs1", "prefs2"} {
		if held := partitionsHold(t, ctx, f.js, m); len(held) > 0 {
			t.Errorf("streams still hold u1's marker %q: %v", m, held)
		}
	}
	if e, err := f.c.GetEntry(ctx, client.User("u2"), "pref-s3", 0); err != nil || !strings.Contains(string(e.GetValue()), "prefs3") {
		t.Errorf("u2's entry after erasing u1: %v %v", e, err)
	}
	if cx, err := f.c.Context(ctx, "s3"); err != nil || len(cx.GetMessages()) == 0 {
		t.Errorf("s3 after erasing u1: %v", err)
	}
	// Sessions s1, s2 and their session scopes, their data, user u1.
	if n := checkLedgerPerPartition(t, partitionLedgers(t, ctx, partitionedLog(t, f.js))); n < 7 {
		t.Errorf("the ledgers name %d erased aggregates, want at least 7", n)
	}
	waitHealthy(t, "http://"+f.n.MetricsAddr(), 30*time.Second)
}

// TestErasePartitionsResumedAfterCrash is TestEraseResumedAfterCrash with
// the log in six partitions: the plan recorded in the stream its id hashes
// to, the session's own removal in the session's stream, nothing purged;
// the node started again finishes both before it serves, each completion
// in its removal's stream, and no second removal is recorded.
func TestErasePartitionsResumedAfterCrash(t *testing.T) {
	f := newPartitionedEraseFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pl := partitionedLog(t, f.js)
	subj := events.SessionSubject("s1")
	seqs, err := events.SubjectSeqs(ctx, pl, subj)
	if err != nil || len(seqs) == 0 {
		t.Fatalf("seqs of s1: %v %v", seqs, err)
	}
	plan := &memoryv1.LogRemoval{Id: "crashed1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:s1",
		Planned: []string{"session.s1", "session_scope.s1"}}
	codec := events.NewCodec()
	now := time.Now()
	if _, err := events.AppendRemoval(ctx, pl, codec, plan, now); err != nil {
		t.Fatal(err)
	}
	ledger, err := events.LedgerLogOf(pl, subj)
	if err != nil {
		t.Fatal(err)
	}
	rm := &memoryv1.LogRemoval{Id: events.PlannedRemovalID("crashed1", "session.s1"), Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:s1",
		Subjects: []string{subj}, Removed: events.RemovalSpans(events.Spans(seqs)), Erased: []string{"session.s1"}, Messages: uint64(len(seqs))}
	if _, err := events.AppendRemoval(ctx, ledger, codec, rm, now); err != nil {
		t.Fatal(err)
	}
	f.n.Kill()

	n2, nc2 := node.StartForTest(t, func(c *node.Config) {
		partitionedEraseConfig(c)
		c.DataDir = f.data
	})
	c2 := client.New(nc2)
	if _, err := c2.Get(ctx, "s1"); client.Code(err) != 404 {
		t.Fatalf("s1 after the resumed erase: %v, want 404", err)
	}
	js2, err := jetstream.New(nc2)
	if err != nil {
		t.Fatal(err)
	}
	// The plan names no large data: the object store keeps s1's blob.
	for _, where := range partitionsHold(t, ctx, js2, "quokkaone") {
		if strings.HasPrefix(where, events.StreamName+"_P") {
			t.Errorf("the log still holds s1's messages after the restart: %s", where)
		}
	}
	leds := partitionLedgers(t, ctx, partitionedLog(t, js2))
	checkLedgerPerPartition(t, leds)
	// The plan, the session's removal and its session scope's: all completed.
	total := 0
	for _, led := range leds {
		total += len(led.Removals)
	}
	if total != 3 {
		t.Fatalf("the ledgers hold %d removals after the restart, want 3", total)
	}
	if _, err := c2.Context(ctx, "s2"); err != nil {
		t.Fatalf("s2 after the restart: %v", err)
	}
	waitHealthy(t, "http://"+n2.MetricsAddr(), 30*time.Second)
}
