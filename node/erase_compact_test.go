package node_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// filesHolding returns the files under dir whose bytes contain marker.
func filesHolding(t *testing.T, dir, marker string) []string {
	t.Helper()
	var hits []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(marker)) {
			rel, _ := filepath.Rel(dir, p)
			hits = append(hits, rel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestEraseThenCompactLeavesNoByte is issue 19's proof end to end: marker
// words in a session's messages (a 1,200-token budget: compressed into
// summaries too) and its assembled context, its session-scope entry, a
// tool result stored as large data, and an entry of its user's scope; the session and the user are erased
// through the API; with the node stopped the markers are still in the
// files (the test can fail), `replay compact` leaves them in none, and the
// node starts again on the directory and `replay verify` passes. A kept
// session's marker stays.
//
// With crash set, the node is killed right after the erase recorded its
// plan and its first item's removal (nothing purged): the restarted node
// finishes it, and the same holds.
func TestEraseThenCompactLeavesNoByte(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "erase"
		if crash {
			name = "kill -9 in the middle of the erase"
		}
		t.Run(name, func(t *testing.T) { eraseThenCompact(t, crash) })
	}
}

func eraseThenCompact(t *testing.T, crash bool) {
	const gone, kept = "platypusgone", "echidnakept"
	data := filepath.Join(t.TempDir(), "data")
	start := func() (*node.Node, *client.Client) {
		n, nc := node.StartForTest(t, func(c *node.Config) { c.DataDir = data })
		return n, client.New(nc)
	}
	n, c := start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range []struct{ id, user, marker string }{{"e1", "u1", gone}, {"k1", "u2", kept}} {
		if _, err := c.CreateSession(ctx, s.id, &memoryv1.CreateSessionRequest{UserId: s.user, Project: "p1", MaxContextTokens: 1200, ReservedOutputTokens: 200}); err != nil {
			t.Fatal(err)
		}
		for i := range 12 { // enough to compress: summaries hold the words too
			if _, err := c.AppendMessages(ctx, s.id,
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: strings.Repeat("the "+s.marker+" report number "+string(rune('a'+i))+" ", 8)},
				&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "noted " + s.marker}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.AppendMessages(ctx, s.id,
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: "call_1", Name: "fetch", Arguments: "{}"}}},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call_1", Content: strings.Repeat("blob of "+s.marker+" ", 12<<10)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Put(ctx, client.SessionScope(s.id), &memoryv1.PutEntryRequest{Key: "draft", Value: []byte("draft " + s.marker)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Put(ctx, client.User(s.user), &memoryv1.PutEntryRequest{Key: "pref", Value: []byte("likes " + s.marker)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Context(ctx, s.id); err != nil {
			t.Fatal(err)
		}
	}
	// u1 publishes a value into project p1; u2's session shows it in its
	// memory section (by reference in its events).
	if _, err := c.Put(ctx, client.SessionScope("e1"), &memoryv1.PutEntryRequest{Key: "plan", Value: []byte("the " + gone + " launch plan")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, "e1", "plan", "project"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "k1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "what is the launch plan?"}); err != nil {
		t.Fatal(err)
	}
	if cx, err := c.Context(ctx, "k1"); err != nil || !strings.Contains(contextText(cx), gone+" launch plan") {
		t.Fatalf("k1's context does not show the published value (the check could not fail): %v", err)
	}
	if crash {
		n, c = crashMidErase(t, ctx, n, data, start)
	} else if _, err := c.EraseUser(ctx, "u1", "test"); err != nil {
		t.Fatalf("erase user u1: %v", err)
	}
	if cx, err := c.Context(ctx, "k1"); err != nil || strings.Contains(contextText(cx), gone) {
		t.Fatalf("k1's context after erasing u1: %v (shows the erased value: %v)", err, strings.Contains(contextText(cx), gone))
	}
	if err := n.WaitProjected(ctx, c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if hits := filesHolding(t, data, gone); len(hits) == 0 {
		t.Fatal("before compact the erased marker is in no file: the test would prove nothing")
	} else {
		t.Logf("before compact %q is in %v", gone, hits)
	}
	var out bytes.Buffer
	if _, err := replay.Compact(ctx, replay.CompactConfig{Conn: replay.Conn{DataDir: data}}, &out); err != nil {
		t.Fatalf("replay compact: %v\n%s", err, out.String())
	}
	t.Logf("compact:\n%s", out.String())
	if hits := filesHolding(t, data, gone); len(hits) > 0 {
		t.Errorf("after erase and compact %q is still in %v", gone, hits)
	}
	if hits := filesHolding(t, data, kept); len(hits) == 0 {
		t.Errorf("the kept session's %q is in no file after compact", kept)
	}
	out.Reset()
	if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{DataDir: data}}, &out); err != nil {
		t.Fatalf("replay verify after compact: %v\n%s", err, out.String())
	}
	_, c = start()
	cx, err := c.Context(ctx, "k1")
	if err != nil || len(cx.GetMessages()) == 0 {
		t.Fatalf("the kept session after compact: %v", err)
	}
}

// contextText is every message of a context, joined.
func contextText(cx *memoryv1.ContextReply) string {
	var b strings.Builder
	for _, m := range cx.GetMessages() {
		b.WriteString(m.GetContent())
		b.WriteByte('\n')
	}
	return b.String()
}

// crashMidErase records the plan of erasing user u1 and its first item's
// removal as the API would, then kills the node before anything is purged
// and starts it again: the restarted node finishes the erase before it
// serves.
func crashMidErase(t *testing.T, ctx context.Context, n *node.Node, data string, start func() (*node.Node, *client.Client)) (*node.Node, *client.Client) {
	t.Helper()
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	jl, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	codec, now := events.NewCodec(), time.Now()
	// The plan the API makes: e1 with its session scope and the large data
	// it stored, the user scope, the published copy.
	items := []string{"session.e1", "session_scope.e1"}
	b, err := jl.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := jl.Read(ctx, 1, events.WithSubjects("mem.ev.data.>"), events.WithStop(b.Last))
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := cur.Next(ctx)
		if err != nil {
			break
		}
		batch, err := events.DecodeBatch(rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := codec.Unpack(batch)
		if err != nil {
			t.Fatal(err)
		}
		if st, ok := evs[0].(*memoryv1.DataStored); ok && st.GetRef().GetOwner() == "session:e1" {
			items = append(items, "data."+st.GetRef().GetId())
		}
	}
	cur.Close()
	if len(items) != 3 {
		t.Fatalf("plan items %v: want e1's large data among them", items)
	}
	plan := &memoryv1.LogRemoval{Id: "crashu1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "user:u1",
		Planned: append(items, "user.u1", "entry:project:p1:plan")}
	if _, err := events.AppendRemoval(ctx, jl, codec, plan, now); err != nil {
		t.Fatal(err)
	}
	subj := events.SessionSubject("e1")
	seqs, err := events.SubjectSeqs(ctx, jl, subj)
	if err != nil {
		t.Fatal(err)
	}
	first := &memoryv1.LogRemoval{Id: events.PlannedRemovalID("crashu1", "session.e1"), Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE,
		Target: "user:u1", Subjects: []string{subj}, Removed: events.RemovalSpans(events.Spans(seqs)), Erased: []string{"session.e1"}, Messages: uint64(len(seqs))}
	if _, err := events.AppendRemoval(ctx, jl, codec, first, now); err != nil {
		t.Fatal(err)
	}
	n.Kill()
	return start()
}
