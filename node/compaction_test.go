package node_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestLogWindowCompactsScopes: with --log-window, a scope whose oldest
// message is older than the window is rewritten from a baseline (a
// ScopeBaseline first on its subject, a completed LogRemoval with reason
// COMPACT listing what went): the old messages leave the log, versions
// older than the window leave the history, each key's current value stays
// readable (get, search); a session is not compacted; and `replay verify`
// passes on the compacted log.
func TestLogWindowCompactsScopes(t *testing.T) {
	const window = 400 * time.Millisecond
	data := filepath.Join(t.TempDir(), "data")
	// The node's clock stands still while the scope is written, then moves
	// past the window: every version but the current ones is then older
	// than it. On the wall clock the compactor (every window/10) could run
	// while the later puts were still inside the window, and keep them
	// (1 run in 20 under load).
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.DataDir, c.LogWindow = data, window
		c.Now = func() time.Time { return time.Unix(0, now.Load()) }
	})
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte(fmt.Sprintf("wombat value %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "other", Value: []byte("numbat")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	subject := events.AgentSubject("a1")
	before, err := events.SubjectSeqs(ctx, l, subject)
	if err != nil || len(before) != 6 {
		t.Fatalf("agent a1 holds %v (%v), want 6 messages", before, err)
	}
	now.Add(int64(2 * window))
	var removal *events.Removal
	eventually(t, "a completed compaction of agent a1", func() (bool, string) {
		led, err := events.ReadLedger(ctx, l, 0)
		if err != nil {
			return false, err.Error()
		}
		for _, r := range led.Removals {
			if r.GetReason() == memoryv1.RemovalReason_REMOVAL_REASON_COMPACT && r.GetTarget() == "scope:agent:a1" && r.Completed {
				removal = r
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d removals", len(led.Removals))
	})
	if removal.GetMessages() < 6 || removal.GetRequestedBy() != "node" {
		t.Errorf("removal %+v, want the 6 first messages, by node", removal.LogRemoval)
	}
	after, err := events.SubjectSeqs(ctx, l, subject)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range after {
		for _, b := range before {
			if s == b {
				t.Errorf("message %d of agent a1 is still in the log after the compaction", s)
			}
		}
	}
	var first []byte
	if _, err := l.Load(ctx, subject, 0, func(r events.Record) error {
		if first == nil {
			first = r.Data
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b, err := events.DecodeBatch(first)
	if err != nil || len(b.GetEvents()) != 1 || !b.GetEvents()[0].MessageIs(&memoryv1.ScopeBaseline{}) {
		t.Fatalf("agent a1's first message after the compaction is not a baseline: %v", err)
	}
	// Reads: the current values, the history without the older versions.
	e, err := c.GetEntry(ctx, client.Agent("a1"), "k", 0)
	if err != nil || !bytes.Equal(e.GetValue(), []byte("wombat value 5")) || e.GetVersion() != 5 {
		t.Fatalf("get k after the compaction: %v %v", e, err)
	}
	h, err := c.History(ctx, client.Agent("a1"), "k")
	if err != nil || len(h) != 1 || h[0].GetVersion() != 5 {
		t.Errorf("history of k after the compaction: %d versions (%v), want version 5 only", len(h), err)
	}
	if _, err := c.GetEntry(ctx, client.Agent("a1"), "k", 2); client.Code(err) != 404 || !strings.Contains(err.Error(), "time-travel window") {
		t.Errorf("get version 2 after the compaction: %v, want 404 naming the window", err)
	}
	if _, err := c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("wombat value 6"), ExpectedVersion: proto.Int64(5)}); err != nil {
		t.Errorf("put expecting version 5 after the compaction: %v", err)
	}
	// A session is never compacted.
	if seqs, err := events.SubjectSeqs(ctx, l, events.SessionSubject("s1")); err != nil || len(seqs) != 2 {
		t.Errorf("session s1 holds %v (%v), want its 2 messages", seqs, err)
	}
	// Rebuild and verify accept the compacted log.
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n.WaitProjected(sctx, c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{DataDir: data}}, &out); err != nil {
		t.Fatalf("replay verify after the compaction: %v\n%s", err, out.String())
	}
}
