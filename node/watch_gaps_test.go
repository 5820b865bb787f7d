package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestWatchSkipsRemovedSequences: a watch from an old sequence whose
// messages were removed (the subject's head purged, one message deleted
// in the middle, as erasure and compaction remove them) starts at the
// next held one and skips the gap; nothing removed is returned.
func TestWatchSkipsRemovedSequences(t *testing.T) {
	_, nc := node.StartForTest(t, func(c *node.Config) { c.LogAllowDelete = true })
	c := client.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seqs []uint64
	for i := range 6 {
		r, err := c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte{byte('a' + i)}})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, r.GetResult().GetSeq())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	// Remove the first two puts (a purge of the subject below the third)
	// and the fourth.
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(events.AgentSubject("a1")), jetstream.WithPurgeSequence(seqs[2])); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, seqs[3]); err != nil {
		t.Fatal(err)
	}
	req := &memoryv1.WatchRequest{FromSeq: 0, MaxChanges: 64}
	body, _ := proto.Marshal(req)
	msg, err := nc.RequestWithContext(ctx, "mem.v1.agent.a1.watch", body)
	if err != nil {
		t.Fatal(err)
	}
	if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
		t.Fatalf("watch: %s %s", code, msg.Header.Get("Nats-Service-Error"))
	}
	rep := &memoryv1.WatchReply{}
	if err := proto.Unmarshal(msg.Data, rep); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, ch := range rep.GetChanges() {
		got = append(got, ch.GetSeq())
	}
	want := []uint64{seqs[2], seqs[4], seqs[5]}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || rep.GetLastSeq() != seqs[5] {
		t.Fatalf("watch from 0 after removals: %v (last %d), want %v", got, rep.GetLastSeq(), want)
	}
	// From inside the gap: the next held one.
	req.FromSeq = seqs[2]
	body, _ = proto.Marshal(req)
	if msg, err = nc.RequestWithContext(ctx, "mem.v1.agent.a1.watch", body); err != nil {
		t.Fatal(err)
	}
	rep.Reset()
	if err := proto.Unmarshal(msg.Data, rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.GetChanges()) != 2 || rep.GetChanges()[0].GetSeq() != seqs[4] {
		t.Fatalf("watch from %d: %v, want from %d", seqs[2], rep.GetChanges(), seqs[4])
	}
}
