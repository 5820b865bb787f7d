package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
)

// A direct watch of a node whose log is in six partitions reads the
// aggregate's partition stream: every change of the session, in order,
// from a sequence of that stream, with the logical subject. A filter
// across aggregates is refused with the reason (no total order across
// streams), and so is a watch that does not say the log is partitioned
// (MEM does not exist).
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

	if _, err := c.Watch(ctx, client.WatchAll, 0, client.WatchPartitions(k)); err == nil {
		t.Fatal("a watch of every aggregate over six streams was accepted")
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
