package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
)

// TestLogHealthPartitions: with the log in six partitions the log health
// check runs on each partition stream against its own removal ledger.
// Erasing a session and then a user removes messages from several
// streams, each removal listed in its stream's ledger: /healthz stays 200
// and agentmem_log_healthy 1. Messages purged from a partition stream
// without a removal (an operator's raw purge) are a fault: /healthz
// answers 503 naming the stream and the messages lost, and it stays so.
func TestLogHealthPartitions(t *testing.T) {
	n, nc := node.StartForTest(t, partitionedEraseConfig)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	h := &healthNode{n: n, nc: nc, c: client.New(nc), js: js}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range []struct{ id, user string }{{"s1", "u1"}, {"s2", "u1"}, {"s3", "u2"}, {"s4", "u1"}} {
		h.session(t, s.id, s.user, 3)
	}
	h.check(t, "before any erase", 200)
	if _, err := h.c.EraseSession(ctx, "s2", "test: one session"); err != nil {
		t.Fatal(err)
	}
	h.check(t, "after erasing session s2", 200)
	if _, err := h.c.EraseUser(ctx, "u1", "test: a user"); err != nil {
		t.Fatal(err)
	}
	pl := partitionedLog(t, js)
	streams := map[int]bool{}
	for i, led := range partitionLedgers(t, ctx, pl) {
		if len(led.Pending()) > 0 {
			t.Fatalf("partition %d: %d removals pending", i, len(led.Pending()))
		}
		for _, r := range led.Removals {
			if len(r.GetRemoved()) > 0 {
				streams[i] = true
			}
		}
	}
	if len(streams) < 2 {
		t.Fatalf("messages were removed from %d partition streams, want several (the test needs it)", len(streams))
	}
	h.check(t, "after erasing user u1", 200)
	h.session(t, "s5", "u2", 2)
	h.check(t, "after more writes", 200)

	// s3's messages (its creation, 3 appends, its session scope's put)
	// purged behind the ledger's back.
	part := events.LogPartition("s3", erasePartitions)
	name := events.PartitionStream(events.StreamName, part, erasePartitions)
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{events.SessionSubject("s3"), events.ScopeSubject("session_scope", "s3")} {
		if err := st.Purge(ctx, jetstream.WithPurgeSubject(events.StoredSubject(subj, part, erasePartitions))); err != nil {
			t.Fatal(err)
		}
	}
	body := h.check(t, "after a purge the ledger does not list", 503)
	if detail := fmt.Sprint(body["log"]); !strings.Contains(detail, "stream "+name) || !strings.Contains(detail, "lost 5 messages") {
		t.Errorf("/healthz log part %s, want it to name stream %s and the 5 messages lost", detail, name)
	}
	h.session(t, "s6", "u2", 1)
	h.check(t, "later", 503)
}
