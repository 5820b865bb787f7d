package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/placement"
)

const testPartitions = 6

func newTestPartitionedLog(t testing.TB, js jetstream.JetStream, cfg JetStreamConfig, k int) *PartitionedLog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := NewPartitionedLog(ctx, js, cfg, k)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestPartitionedLogConformance(t *testing.T) {
	RunLogConformance(t, func(t *testing.T) Log {
		return newTestPartitionedLog(t, newTestJetStream(t), DefaultJetStreamConfig(), testPartitions)
	})
}

// TestPartitionedLogOneIsToday: K = 1 is the one stream MEM of today's
// layout, subjects stored as they are.
func TestPartitionedLogOneIsToday(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := newTestPartitionedLog(t, js, DefaultJetStreamConfig(), 1)
	if got := l.Streams(); len(got) != 1 || got[0] != StreamName {
		t.Fatalf("streams %v, want [MEM]", got)
	}
	if _, err := l.Append(ctx, SessionSubject("s1"), 0, "m1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultJetStreamConfig().StreamConfig()
	have := st.CachedInfo().Config
	if len(have.Subjects) != 1 || have.Subjects[0] != "mem.ev.>" || have.Metadata[PartitionsMetadataKey] != "" || want.Metadata != nil {
		t.Fatalf("stream subjects %v metadata %v", have.Subjects, have.Metadata)
	}
	if m, err := st.GetLastMsgForSubject(ctx, "mem.ev.session.s1"); err != nil || string(m.Data) != "x" {
		t.Fatalf("stored under mem.ev.session.s1: %v %v", m, err)
	}
}

// TestPartitionedLogLayout: K = 6 makes MEM_P0..MEM_P5, each with today's
// configuration but its name, filter mem.ev.p<i>.> and the metadata
// naming K and i; each aggregate is stored in the stream of its id's
// placement hash under mem.ev.p<i>.<kind>.<id>, read back with its logical
// subject; a core subscriber on mem.ev.> sees the stored subject and parses
// it with ParseStoredSubject.
func TestPartitionedLogLayout(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	l := newTestPartitionedLog(t, js, cfg, testPartitions)

	today := cfg.StreamConfig()
	for i := range testPartitions {
		name := "MEM_P" + strconv.Itoa(i)
		if l.Streams()[i] != name {
			t.Fatalf("stream %d is %s, want %s", i, l.Streams()[i], name)
		}
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		c := st.CachedInfo().Config
		if len(c.Subjects) != 1 || c.Subjects[0] != fmt.Sprintf("mem.ev.p%d.>", i) {
			t.Fatalf("%s subjects %v", name, c.Subjects)
		}
		if c.Metadata[PartitionsMetadataKey] != "6" || c.Metadata[PartitionMetadataKey] != strconv.Itoa(i) {
			t.Fatalf("%s metadata %v", name, c.Metadata)
		}
		if c.Replicas != today.Replicas || c.Duplicates != today.Duplicates || c.Storage != today.Storage ||
			c.Retention != today.Retention || c.DenyDelete != today.DenyDelete || c.DenyPurge != today.DenyPurge ||
			c.AllowDirect != today.AllowDirect || c.Description != today.Description {
			t.Fatalf("%s config differs from today's stream: %+v", name, c)
		}
	}
	if _, err := js.Stream(ctx, StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream MEM exists next to the partitions: %v", err)
	}

	seen := make(chan string, 64)
	sub, err := js.Conn().Subscribe("mem.ev.>", func(m *nats.Msg) { seen <- m.Subject })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}

	used := map[int]bool{}
	for n := range 30 {
		id := fmt.Sprintf("sess-%d", n)
		subj := SessionSubject(id)
		p := placement.Partition(id, testPartitions)
		used[p] = true
		res, err := l.Append(ctx, subj, 0, "m-"+id, []byte(id))
		if err != nil {
			t.Fatal(err)
		}
		stored := fmt.Sprintf("mem.ev.p%d.session.%s", p, id)
		if got := StoredSubject(subj, p, testPartitions); got != stored {
			t.Fatalf("StoredSubject = %s, want %s", got, stored)
		}
		st, err := js.Stream(ctx, fmt.Sprintf("MEM_P%d", p))
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.GetLastMsgForSubject(ctx, stored)
		if err != nil || m.Sequence != res.Seq || string(m.Data) != id {
			t.Fatalf("%s in MEM_P%d: %+v, %v; want seq %d", stored, p, m, err, res.Seq)
		}
		select {
		case got := <-seen:
			gp, kind, gid, err := ParseStoredSubject(got)
			if err != nil || got != stored || gp != p || kind != KindSession || gid != id {
				t.Fatalf("subscriber saw %s: %d %s %s %v", got, gp, kind, gid, err)
			}
		case <-ctx.Done():
			t.Fatal("the subscriber on mem.ev.> saw nothing")
		}
		// The partition's reader returns the logical subject.
		cur, err := l.Partition(p).Read(ctx, res.Seq, WithStop(res.Seq), WithSubjects(subj))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := cur.Next(ctx)
		cur.Close()
		if err != nil || rec.Subject != subj || rec.Seq != res.Seq {
			t.Fatalf("partition %d read: %+v, %v", p, rec, err)
		}
	}
	if len(used) != testPartitions {
		t.Fatalf("30 sessions used partitions %v: want all %d", used, testPartitions)
	}

	counts, err := l.SubjectCounts(ctx, "mem.ev.session.*")
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 30 || counts[SessionSubject("sess-7")] != 1 {
		t.Fatalf("SubjectCounts: %d subjects (%v)", len(counts), counts[SessionSubject("sess-7")])
	}
}

// TestPartitionedLogRemoveSubject: a removal purges the aggregate in its
// own stream only.
func TestPartitionedLogRemoveSubject(t *testing.T) {
	js := newTestJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	cfg.AllowDelete = true
	l := newTestPartitionedLog(t, js, cfg, testPartitions)
	a, b := SessionSubject("gone"), SessionSubject("kept")
	last := map[string]uint64{}
	for i := range 3 {
		for _, s := range []string{a, b} {
			res, err := l.Append(ctx, s, last[s], fmt.Sprintf("%s-%d", s, i), []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			last[s] = res.Seq
		}
	}
	if err := l.RemoveSubject(ctx, a, last[a]); err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]int{a: 0, b: 3} {
		n := 0
		if _, err := l.Load(ctx, s, 0, func(Record) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("%s holds %d messages, want %d", s, n, want)
		}
	}
}

// TestPartitionedLogRefusesOtherLayouts: K > 1 next to the one stream MEM,
// or on partitions of another K, is refused (ErrPartitions); the one
// stream cannot be created next to partitions (the server refuses
// overlapping subjects).
func TestPartitionedLogRefusesOtherLayouts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()

	js := newTestJetStream(t)
	if _, err := NewJetStreamLog(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPartitionedLog(ctx, js, cfg, testPartitions); !errors.Is(err, ErrPartitions) {
		t.Fatalf("K=6 next to MEM: %v, want ErrPartitions", err)
	}
	if _, err := js.Stream(ctx, "MEM_P0"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("a refused start created MEM_P0: %v", err)
	}

	js = newTestJetStream(t)
	newTestPartitionedLog(t, js, cfg, testPartitions)
	for _, k := range []int{4, 8} {
		if _, err := NewPartitionedLog(ctx, js, cfg, k); !errors.Is(err, ErrPartitions) {
			t.Fatalf("K=%d on 6 partitions: %v, want ErrPartitions", k, err)
		}
	}
	if _, err := NewJetStreamLog(ctx, js, cfg); err == nil {
		t.Fatal("the one stream MEM was created next to 6 partitions")
	}
	// The same K opens again.
	newTestPartitionedLog(t, js, cfg, testPartitions)
	if _, err := NewPartitionedLog(ctx, js, cfg, 0); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("K=0: %v, want ErrInvalidConfig", err)
	}
}

// TestPartitionReaderConformance: one partition's stream read through its
// JetStreamLog (stored subjects mem.ev.p3.*) behaves as the one stream.
func TestPartitionReaderConformance(t *testing.T) {
	RunReaderConformance(t, func(t *testing.T) ReaderFixture {
		js := newTestJetStream(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pc := partitionConfig(DefaultJetStreamConfig(), 3, testPartitions)
		sc := pc.StreamConfig()
		sc.DenyDelete, sc.DenyPurge = false, false
		s, err := js.CreateStream(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		l, err := OpenJetStreamLog(js, pc)
		if err != nil {
			t.Fatal(err)
		}
		return ReaderFixture{
			Log: l, Reader: l,
			DeleteMsg: func(ctx context.Context, seq uint64) error { return s.DeleteMsg(ctx, seq) },
			PurgeBefore: func(ctx context.Context, seq uint64) error {
				return s.Purge(ctx, jetstream.WithPurgeSequence(seq))
			},
		}
	})
}

// TestLogPartitionIsPlacements: the log's partition of an id is
// placement's.
func TestLogPartitionIsPlacements(t *testing.T) {
	for _, k := range []int{1, 2, 6, 7, 64, MaxLogPartitions} {
		for n := range 500 {
			id := fmt.Sprintf("id-%d", n)
			if got, want := LogPartition(id, k), placement.Partition(id, k); got != want {
				t.Fatalf("LogPartition(%s, %d) = %d, placement says %d", id, k, got, want)
			}
		}
	}
}

func TestStoredSubjects(t *testing.T) {
	subj := ScopeSubject("user", "u-1")
	if got := StoredSubject(subj, 0, 1); got != subj {
		t.Fatalf("K=1 stored %s, want %s unchanged", got, subj)
	}
	if got := StoredSubject(subj, 5, 6); got != "mem.ev.p5.user.u-1" {
		t.Fatalf("stored %s", got)
	}
	if got := StoredSubject("mem.ev.>", 2, 6); got != "mem.ev.p2.>" || got != PartitionSubjects(2, 6) {
		t.Fatalf("stored filter %s", got)
	}
	if got := logicalIn("p5", "mem.ev.p5.user.u-1"); got != subj {
		t.Fatalf("logical %s", got)
	}
	for subj, want := range map[string][3]string{
		"mem.ev.session.s1":     {"-1", "session", "s1"},
		"mem.ev.p0.session.s1":  {"0", "session", "s1"},
		"mem.ev.p17.agent.a":    {"17", "agent", "a"},
		"mem.ev.p3.workflow.w9": {"3", "workflow", "w9"},
	} {
		p, kind, id, err := ParseStoredSubject(subj)
		if err != nil || strconv.Itoa(p) != want[0] || kind != want[1] || id != want[2] {
			t.Errorf("ParseStoredSubject(%s) = %d %s %s %v; want %v", subj, p, kind, id, err, want)
		}
	}
	for _, bad := range []string{"mem.ev.q3.session.s1", "mem.ev.p03.session.s1", "mem.ev.p-1.session.s1", "mem.ev.p.session.s1",
		"mem.ev.p9999.session.s1", "mem.ev.p1.session.s.1", "mem.ev.session", "other.p1.session.s1"} {
		if _, _, _, err := ParseStoredSubject(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseStoredSubject(%s) = %v, want ErrInvalidID", bad, err)
		}
	}
	if PartitionStream("MEM", 0, 1) != "MEM" || PartitionStream("MEM", 4, 6) != "MEM_P4" {
		t.Fatal("stream names")
	}
}
