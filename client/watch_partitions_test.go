package client_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/api/consistency"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
)

// A direct watch of a node whose log is in six partitions reads the
// aggregate's partition stream: every change of the session, in order,
// from a sequence of that stream, with the logical subject. A filter
// across aggregates from one sequence is refused with the reason (the
// sequence names no partition), and so is a watch that does not say the
// log is partitioned (MEM does not exist).
func TestWatchPartitionedLog(t *testing.T) {
	const k = 6
	_, nc := node.StartForTest(t, func(c *node.Config) { c.LogPartitions = k })
	waitServing(nc)
	c := client.New(nc)
	seqs := appendN(t, c, "a", true, 3)
	appendN(t, c, "b", true, 2) // another session, maybe another partition
	part := events.LogPartition("a", k)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := c.Watch(ctx, client.WatchSession("a"), seqs[0], client.WatchPartitions(k))
	if err != nil {
		t.Fatal(err)
	}
	want := seqs[1:]
	got := collect(t, w, len(want), 10*time.Second)
	if !slices.Equal(seqsOf(got), want) {
		t.Fatalf("seqs = %v, want %v (partition %d's stream)", seqsOf(got), want, part)
	}
	for i, ch := range got {
		if ch.Subject != "mem.ev.session.a" || ch.Kind != "session" || ch.ID != "a" || ch.Partition != part {
			t.Fatalf("change %d: subject %q kind %q id %q partition %d, want partition %d", i, ch.Subject, ch.Kind, ch.ID, ch.Partition, part)
		}
	}
	expectQuiet(t, w)
	more := appendN(t, c, "a", false, 1)
	if live := collect(t, w, len(more), 10*time.Second); !slices.Equal(seqsOf(live), more) {
		t.Fatalf("live seqs = %v, want %v", seqsOf(live), more)
	}

	if _, err := c.Watch(ctx, client.WatchAll, seqs[0], client.WatchPartitions(k)); err == nil {
		t.Fatal("a watch of every aggregate over six streams from one sequence was accepted")
	}
	if _, err := c.Watch(ctx, client.WatchSession("a"), 0, client.WatchPartitions(0)); !errors.Is(err, events.ErrInvalidConfig) {
		t.Fatalf("WatchPartitions(0): %v, want ErrInvalidConfig", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if _, err := c.Watch(short, client.WatchSession("a"), 0); err == nil {
		t.Fatal("a watch of stream MEM on a partitioned log was accepted")
	}
}

// A watch across aggregates of a log in six partitions reads the six
// streams side by side: every change of the log once, each partition's in
// its order, each with its partition and position; resumed from the merged
// positions of the changes handled it delivers exactly the rest, then
// live changes.
func TestWatchAcrossPartitions(t *testing.T) {
	const k = 6
	_, nc := node.StartForTest(t, func(c *node.Config) { c.LogPartitions = k })
	waitServing(nc)
	c := client.New(nc)
	parts := map[int]bool{}
	ours := map[string]bool{} // "id seq" of every change written here
	for i := 0; len(parts) < 4; i++ {
		id := "w" + strconv.Itoa(i)
		parts[events.LogPartition(id, k)] = true
		for _, seq := range appendN(t, c, id, true, 3) {
			ours[id+" "+strconv.FormatUint(seq, 10)] = true
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := c.Watch(ctx, client.WatchAll, 0, client.WatchPartitions(k))
	if err != nil {
		t.Fatal(err)
	}
	all := collectQuiet(w)
	last := map[int]uint64{}
	for _, ch := range all {
		delete(ours, ch.ID+" "+strconv.FormatUint(ch.Seq, 10))
		if ch.Partition != events.LogPartition(ch.ID, k) || ch.Position != consistency.Format(k, ch.Partition, ch.Seq) {
			t.Fatalf("change %s seq %d: partition %d position %q, want partition %d", ch.Subject, ch.Seq, ch.Partition, ch.Position, events.LogPartition(ch.ID, k))
		}
		if ch.Seq <= last[ch.Partition] {
			t.Fatalf("partition %d: seq %d after %d", ch.Partition, ch.Seq, last[ch.Partition])
		}
		last[ch.Partition] = ch.Seq
	}
	if len(ours) > 0 {
		t.Fatalf("%d changes written were not delivered: %v", len(ours), ours)
	}

	handled, rest := all[:len(all)/2], all[len(all)/2:]
	var positions []string
	for _, ch := range handled {
		positions = append(positions, ch.Position)
	}
	resume := consistency.Merge(positions...)
	r, err := c.Watch(ctx, client.WatchAll, 0, client.WatchPartitions(k), client.WatchResume(resume))
	if err != nil {
		t.Fatal(err)
	}
	got := collectQuiet(r)
	key := func(chs []client.Change) []string {
		var out []string
		for _, ch := range chs {
			out = append(out, ch.Position)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(key(got), key(rest)) {
		t.Fatalf("resumed after %s: %d changes %v, want the %d not handled %v", resume, len(got), key(got), len(rest), key(rest))
	}
	more := appendN(t, c, "w0", false, 1)
	if live := collect(t, r, 1, 10*time.Second); live[0].Seq != more[0] || live[0].ID != "w0" {
		t.Fatalf("live change %s seq %d, want w0 seq %d", live[0].ID, live[0].Seq, more[0])
	}
	if _, err := c.Watch(ctx, client.WatchAll, 0, client.WatchPartitions(k), client.WatchResume("k1:p0:3")); err == nil {
		t.Fatal("positions of a log in one stream were accepted for six partitions")
	}
	// Cancelled, the watches delete their consumers on every stream.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	consumers := func() (n int) {
		for i := range k {
			s, err := js.Stream(context.Background(), events.PartitionStream(events.StreamName, i, k))
			if err != nil {
				t.Fatal(err)
			}
			n += s.CachedInfo().State.Consumers
		}
		return n
	}
	during := consumers()
	cancel()
	for range collectQuiet(w) {
	}
	for range collectQuiet(r) {
	}
	after := consumers()
	t.Logf("consumers on the six streams: %d with two watches, %d after", during, after)
	if during-after != 2*k {
		t.Fatalf("consumers: %d with two watches open, %d after they ended: want %d fewer", during, after, 2*k)
	}
}

// collectQuiet is every change w delivers until none comes for 500 ms.
func collectQuiet(w *client.Watch) []client.Change {
	var got []client.Change
	for {
		select {
		case ch, ok := <-w.Changes():
			if !ok {
				return got
			}
			got = append(got, ch)
		case <-time.After(500 * time.Millisecond):
			return got
		}
	}
}
