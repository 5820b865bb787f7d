package node_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestLogWindowCompactsPartitions is TestLogWindowCompactsScopes with the
// log in six partitions: agents in several partition streams, each
// compacted in its own stream (its ScopeBaseline first on its subject, its
// completed COMPACT removal in that stream's ledger), the old messages
// gone, the current values readable and the older versions not; a session
// is not compacted; a node started again on the compacted streams (each
// partition's gaps checked against its own ledger) serves the same.
func TestLogWindowCompactsPartitions(t *testing.T) {
	const window = 400 * time.Millisecond
	data := filepath.Join(t.TempDir(), "data")
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	cfg := func(c *node.Config) {
		partitionedEraseConfig(c)
		c.DataDir, c.LogWindow = data, window
		c.Now = func() time.Time { return time.Unix(0, now.Load()) }
	}
	n, nc := node.StartForTest(t, cfg)
	c := client.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
		t.Fatal(err)
	}
	agents := []string{"a1", "a2", "a3", "a4"}
	parts := map[int]bool{}
	for _, a := range agents {
		parts[events.LogPartition(a, erasePartitions)] = true
		for i := 1; i <= 3; i++ {
			if _, err := c.Put(ctx, client.Agent(a), &memoryv1.PutEntryRequest{Key: "k", Value: []byte(fmt.Sprintf("wombat %s value %d", a, i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(parts) < 2 {
		t.Fatalf("the agents are in %d partition, want several", len(parts))
	}
	if _, err := c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	pl := partitionedLog(t, js)
	before := map[string][]uint64{}
	for _, a := range agents {
		seqs, err := events.SubjectSeqs(ctx, pl, events.AgentSubject(a))
		if err != nil || len(seqs) != 3 {
			t.Fatalf("agent %s holds %v (%v), want 3 messages", a, seqs, err)
		}
		before[a] = seqs
	}
	now.Add(int64(2 * window))
	eventually(t, "a completed compaction of every agent, in its partition's ledger", func() (bool, string) {
		done := 0
		for i, led := range partitionLedgers(t, ctx, pl) {
			for _, r := range led.Removals {
				if r.GetReason() != memoryv1.RemovalReason_REMOVAL_REASON_COMPACT || !r.Completed {
					continue
				}
				for _, a := range agents {
					if r.GetTarget() == "scope:agent:"+a {
						if p := events.LogPartition(a, erasePartitions); p != i {
							return false, fmt.Sprintf("the compaction of %s is in partition %d, its stream is %d", a, i, p)
						}
						done++
					}
				}
			}
		}
		return done == len(agents), fmt.Sprintf("%d of %d compacted", done, len(agents))
	})
	for _, a := range agents {
		subject := events.AgentSubject(a)
		var first []byte
		if _, err := pl.Load(ctx, subject, 0, func(r events.Record) error {
			for _, s := range before[a] {
				if r.Seq == s {
					t.Errorf("message %d of agent %s is still in the log after the compaction", s, a)
				}
			}
			if first == nil {
				first = r.Data
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		b, err := events.DecodeBatch(first)
		if err != nil || len(b.GetEvents()) != 1 || !b.GetEvents()[0].MessageIs(&memoryv1.ScopeBaseline{}) {
			t.Fatalf("agent %s's first message after the compaction is not a baseline: %v", a, err)
		}
	}
	check := func(c *client.Client, when string) {
		t.Helper()
		for _, a := range agents {
			e, err := c.GetEntry(ctx, client.Agent(a), "k", 0)
			if err != nil || !bytes.Equal(e.GetValue(), []byte("wombat "+a+" value 3")) || e.GetVersion() != 3 {
				t.Fatalf("%s: get %s k: %v %v", when, a, e, err)
			}
			if h, err := c.History(ctx, client.Agent(a), "k"); err != nil || len(h) != 1 || h[0].GetVersion() != 3 {
				t.Errorf("%s: history of %s k: %d versions (%v), want version 3 only", when, a, len(h), err)
			}
			if _, err := c.GetEntry(ctx, client.Agent(a), "k", 1); client.Code(err) != 404 {
				t.Errorf("%s: get %s k version 1: %v, want 404", when, a, err)
			}
		}
		if seqs, err := events.SubjectSeqs(ctx, pl, events.SessionSubject("s1")); err != nil || len(seqs) != 2 {
			t.Errorf("%s: session s1 holds %v (%v), want its 2 messages", when, seqs, err)
		}
	}
	check(c, "after the compaction")

	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	if err := n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	_, nc2 := node.StartForTest(t, cfg)
	js2, err := jetstream.New(nc2)
	if err != nil {
		t.Fatal(err)
	}
	pl = partitionedLog(t, js2)
	check(client.New(nc2), "after a restart")
}
