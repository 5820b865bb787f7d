package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// writeOneStreamLog appends n batches over 20 aggregates of three kinds to
// the one stream MEM (allowing deletes), deletes one message in the middle
// (an erasure's gap), and returns what each subject holds in order.
func writeOneStreamLog(t *testing.T, js jetstream.JetStream, n int) map[string][]keptMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	cfg.AllowDelete = true
	l, err := NewJetStreamLog(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]uint64{}
	out := map[string][]keptMsg{}
	var gone uint64
	for i := range n {
		var subj string
		switch i % 3 {
		case 0:
			subj = SessionSubject(fmt.Sprintf("s%d", i%20))
		case 1:
			subj = AgentSubject(fmt.Sprintf("a%d", i%20))
		default:
			subj = ScopeSubject("user", fmt.Sprintf("u%d", i%20))
		}
		id := fmt.Sprintf("c%d", i)
		data := fmt.Appendf(nil, "batch %d of %s", i, subj)
		res, err := l.Append(ctx, subj, last[subj], id, data)
		if err != nil {
			t.Fatal(err)
		}
		last[subj] = res.Seq
		if i == n/2 {
			gone = res.Seq // deleted below: not kept
			continue
		}
		out[subj] = append(out[subj], keptMsg{subject: subj, msgID: id, data: data})
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, gone); err != nil {
		t.Fatal(err)
	}
	// A snapshot bucket recording sequences of the one stream.
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: StreamName + "_SNAPSHOTS"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "session.s1", []byte("at seq 7")); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPartitioned checks the log is in k partitions holding want, each
// subject in order with its message ids, MEM gone, the snapshots purged,
// and the log writable at each subject's last sequence.
func checkPartitioned(t *testing.T, js jetstream.JetStream, k int, want map[string][]keptMsg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.Stream(ctx, StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("MEM after the migration: %v", err)
	}
	cfg := DefaultJetStreamConfig()
	cfg.AllowDelete = true
	l, err := NewPartitionedLog(ctx, js, cfg, k)
	if err != nil {
		t.Fatalf("a node's open of the migrated log: %v", err)
	}
	for subj, msgs := range want {
		p, _ := l.PartitionOf(subj)
		var got []Record
		if _, err := l.Load(ctx, subj, 0, func(r Record) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(msgs) {
			t.Fatalf("%s: %d messages, want %d", subj, len(got), len(msgs))
		}
		s, err := js.Stream(ctx, PartitionStream(StreamName, p, k))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range got {
			if r.Subject != subj || !bytes.Equal(r.Data, msgs[i].data) {
				t.Fatalf("%s message %d: %s %q, want %q", subj, i, r.Subject, r.Data, msgs[i].data)
			}
			raw, err := s.GetMsg(ctx, r.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if id := raw.Header.Get(jetstream.MsgIDHeader); id != msgs[i].msgID {
				t.Fatalf("%s message %d: message id %q, want %q", subj, i, id, msgs[i].msgID)
			}
		}
		last := got[len(got)-1].Seq
		if _, err := l.Append(ctx, subj, last, "after-"+subj, []byte("after")); err != nil {
			t.Fatalf("append to %s after the migration: %v", subj, err)
		}
	}
	kv, err := js.KeyValue(ctx, StreamName+"_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "session.s1"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a snapshot of the one stream survived: %v", err)
	}
}

// TestMigrateToPartitions: the one stream (with a gap) moves to six
// partitions, every message kept in its aggregate's order with its
// headers; a second run has nothing to do.
func TestMigrateToPartitions(t *testing.T) {
	js := newTestJetStream(t)
	want := writeOneStreamLog(t, js, 120)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := MigrateToPartitions(ctx, js, PartitionMigrateConfig{Partitions: testPartitions})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != 119 || rep.AlreadyDone || rep.Resumed != "" || len(rep.PerPartition) != testPartitions {
		t.Fatalf("report %+v", rep)
	}
	checkPartitioned(t, js, testPartitions, want)
	again, err := MigrateToPartitions(ctx, js, PartitionMigrateConfig{Partitions: testPartitions})
	if err != nil || !again.AlreadyDone {
		t.Fatalf("second run: %+v, %v", again, err)
	}
}

// TestMigrateToPartitionsResumes: a run stopped in the middle of the copy
// leaves a log no node opens, whatever its K; run again it finishes, no
// message copied twice.
func TestMigrateToPartitionsResumes(t *testing.T) {
	js := newTestJetStream(t)
	want := writeOneStreamLog(t, js, 90)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stop, stopCancel := context.WithCancel(ctx)
	_, err := MigrateToPartitions(stop, js, PartitionMigrateConfig{Partitions: testPartitions, Progress: func(s MigrateStep, done, _ uint64) {
		if s == StepCopyPartitions && done >= 40 {
			stopCancel()
		}
	}})
	stopCancel()
	if err == nil {
		t.Fatal("the stopped run reported success")
	}
	if _, err := NewJetStreamLog(ctx, js, DefaultJetStreamConfig()); !errors.Is(err, ErrMigrating) {
		t.Fatalf("one-stream open mid-way: %v, want ErrMigrating", err)
	}
	if _, err := NewPartitionedLog(ctx, js, DefaultJetStreamConfig(), testPartitions); err == nil {
		t.Fatal("a six-partition open mid-way succeeded")
	}
	if _, err := MigrateToPartitions(ctx, js, PartitionMigrateConfig{Partitions: 4}); !errors.Is(err, ErrMigrateState) && !errors.Is(err, ErrPartitions) {
		t.Fatalf("resumed with another K: %v", err)
	}
	rep, err := MigrateToPartitions(ctx, js, PartitionMigrateConfig{Partitions: testPartitions})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed == "" || rep.Messages != 89 {
		t.Fatalf("report %+v", rep)
	}
	checkPartitioned(t, js, testPartitions, want)
}

// TestMigrateToPartitionsRefuses: partition streams beside the one stream,
// or a removal not completed, stop it before anything changes.
func TestMigrateToPartitionsRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := newTestJetStream(t)
	writeOneStreamLog(t, js, 10)
	// The copy of a `migrate-log` (to allow deletes) under way.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MEM_MIGRATE", Subjects: []string{"agentmem.migrate.MEM.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateToPartitions(ctx, js, PartitionMigrateConfig{Partitions: testPartitions}); !errors.Is(err, ErrMigrating) {
		t.Fatalf("with MEM_MIGRATE beside MEM: %v, want ErrMigrating", err)
	}
	if err := js.DeleteStream(ctx, "MEM_MIGRATE"); err != nil {
		t.Fatal(err)
	}
	// A stream in a partition's place (the filter may not overlap MEM's).
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MEM_P2", Subjects: []string{"other.>"},
		Metadata: map[string]string{PartitionsMetadataKey: "6"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateToPartitions(ctx, js, PartitionMigrateConfig{Partitions: testPartitions}); !errors.Is(err, ErrPartitions) {
		t.Fatalf("with MEM_P2 beside MEM: %v, want ErrPartitions", err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.Subjects[0] != "mem.ev.>" || c.Metadata[MigratingMetadataKey] != "" {
		t.Fatalf("a refused run changed MEM: %v %v", c.Subjects, c.Metadata)
	}
}

// TestMigrateToPartitionsRefusesPendingRemoval: a removal recorded and not
// completed names sequences of the one stream: the migration waits for it.
func TestMigrateToPartitionsRefusesPendingRemoval(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := newTestJetStream(t)
	writeOneStreamLog(t, js, 10)
	l, err := OpenJetStreamLog(js, DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	codec := NewCodec()
	rm := &memoryv1.LogRemoval{Id: "r1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:s1", Erased: []string{"session.s1"}}
	at, err := AppendRemoval(ctx, l, codec, rm, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateToPartitions(ctx, js, PartitionMigrateConfig{Partitions: testPartitions}); !errors.Is(err, ErrMigrateState) {
		t.Fatalf("with removal r1 pending: %v, want ErrMigrateState", err)
	}
	if _, err := CompleteRemoval(ctx, l, codec, "r1", at, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateToPartitions(ctx, js, PartitionMigrateConfig{Partitions: testPartitions}); err != nil {
		t.Fatalf("with r1 completed: %v", err)
	}
}
