package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// healthNode is a node with its HTTP listener on, a client, an operator's
// JetStream (every right) and the log read back from the server.
type healthNode struct {
	n  *node.Node
	nc *nats.Conn
	c  *client.Client
	js jetstream.JetStream
	l  *events.JetStreamLog
}

func startHealthNode(t *testing.T, mutate func(*node.Config)) *healthNode {
	t.Helper()
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		if mutate != nil {
			mutate(c)
		}
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &healthNode{n: n, nc: nc, c: client.New(nc), js: js, l: l}
}

// session creates session id of user and appends turns messages to it,
// with an entry in its session scope and one in the user's scope.
func (h *healthNode) session(t *testing.T, id, user string, turns int) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user}); err != nil {
		t.Fatal(err)
	}
	for i := range turns {
		if _, err := h.c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("turn %d of %s", i, id)}); err != nil {
			t.Fatal(err)
		}
	}
	// The last message's sections are searched after its append is
	// answered: read the context (it waits for them) so that they are
	// decided before the puts below, whatever the projection's pace, and
	// the session's messages are the same from run to run.
	if _, err := h.c.Context(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Put(ctx, client.SessionScope(id), &memoryv1.PutEntryRequest{Key: "draft", Value: []byte("draft of " + id)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Put(ctx, client.User(user), &memoryv1.PutEntryRequest{Key: "pref-" + id, Value: []byte("pref of " + id)}); err != nil {
		t.Fatal(err)
	}
}

// check has the node look at its log now, then checks that /healthz
// answers code and agentmem_log_healthy agrees; it returns /healthz's body.
func (h *healthNode) check(t *testing.T, what string, code int) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	problem, err := h.n.CheckLogForTest(ctx)
	if err != nil {
		t.Fatalf("%s: check the log: %v", what, err)
	}
	got, body := healthz(t, h.n)
	if got != code {
		t.Fatalf("%s: /healthz = %d %v, want %d (the log check says %q)", what, got, body, code, problem)
	}
	wantGauge := 1.0
	if code != 200 {
		wantGauge = 0
	}
	if g := gaugeOf(t, h.n, "agentmem_log_healthy"); g != wantGauge {
		t.Fatalf("%s: agentmem_log_healthy = %v, want %v", what, g, wantGauge)
	}
	return body
}

// removalsDone waits until the removal ledger holds at least n removals,
// every one completed.
func (h *healthNode) removalsDone(t *testing.T, n int) *events.Ledger {
	t.Helper()
	var led *events.Ledger
	eventually(t, fmt.Sprintf("%d completed removals", n), func() (bool, string) {
		var err error
		if led, err = events.ReadLedger(context.Background(), h.l, 0); err != nil {
			return false, err.Error()
		}
		return len(led.Removals) >= n && len(led.Pending()) == 0,
			fmt.Sprintf("%d removals, %d pending", len(led.Removals), len(led.Pending()))
	})
	return led
}

// gaugeOf is the value of the unlabelled gauge name on n's registry.
func gaugeOf(t *testing.T, n *node.Node, name string) float64 {
	t.Helper()
	mfs, err := n.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestHealthAfterErase: an erase of a session, then of a user, on a
// default node removes messages from the log (its first sequence moves,
// sequences go missing in the middle); each removal is in the removal
// ledger, so /healthz stays 200 and agentmem_log_healthy 1, and stays so
// while the log grows afterwards.
func TestHealthAfterErase(t *testing.T) {
	h := startHealthNode(t, nil)
	ctx := context.Background()
	h.session(t, "s1", "u1", 3) // the head of the log
	h.session(t, "s2", "u1", 3)
	h.session(t, "s3", "u2", 3)
	h.session(t, "s4", "u1", 3)
	h.check(t, "before any erase", 200)

	if _, err := h.c.EraseSession(ctx, "s2", "test: a session from the middle"); err != nil {
		t.Fatal(err)
	}
	h.removalsDone(t, 1)
	h.check(t, "after erasing session s2", 200)

	if _, err := h.c.EraseUser(ctx, "u1", "test: the user of the log's head"); err != nil {
		t.Fatal(err)
	}
	h.removalsDone(t, 2)
	b, err := h.l.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.First == 1 {
		t.Fatalf("bounds %+v after erasing user u1: the first sequence did not move (the test needs it to)", b)
	}
	h.check(t, "after erasing user u1", 200)

	h.session(t, "s5", "u2", 2)
	h.check(t, "after more writes", 200)
}

// TestHealthAfterRetention: the retention sweep's erase of an archived
// session (--archive-after, --delete-after) leaves /healthz at 200.
func TestHealthAfterRetention(t *testing.T) {
	h := startHealthNode(t, func(c *node.Config) { c.ArchiveAfter, c.DeleteAfter = 200*time.Millisecond, 300*time.Millisecond })
	ctx := context.Background()
	h.session(t, "old", "u1", 3)
	h.session(t, "live", "u1", 3)
	h.check(t, "before the sweep", 200)
	if _, err := h.c.SetStatus(ctx, "old", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the retention erase of the archived session", func() (bool, string) {
		_, err := h.c.Get(ctx, "old")
		return client.Code(err) == 404, "get: " + errString(err)
	})
	h.removalsDone(t, 1)
	h.check(t, "after the retention erase", 200)
}

// TestHealthAfterCompaction: the bounded log's compaction (--log-window)
// removes a scope's old messages; /healthz stays 200.
func TestHealthAfterCompaction(t *testing.T) {
	h := startHealthNode(t, func(c *node.Config) { c.LogWindow = 300 * time.Millisecond })
	ctx := context.Background()
	h.session(t, "s1", "u1", 2)
	for i := range 5 {
		if _, err := h.c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: fmt.Appendf(nil, "value %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	h.check(t, "before the compaction", 200)
	eventually(t, "a completed compaction of agent a1", func() (bool, string) {
		led, err := events.ReadLedger(ctx, h.l, 0)
		if err != nil {
			return false, err.Error()
		}
		for _, r := range led.Removals {
			if r.GetReason() == memoryv1.RemovalReason_REMOVAL_REASON_COMPACT && r.GetTarget() == "scope:agent:a1" && r.Completed {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d removals", len(led.Removals))
	})
	h.check(t, "after the compaction", 200)
}

// TestHealthPurgeBehindLedger: messages that vanish without a removal in
// the ledger (an operator's raw purge) are a fault, at the head of the log
// or in its middle, even when a legitimate erase removed others in the
// same interval; /healthz answers 503 naming what the ledger does not
// explain.
func TestHealthPurgeBehindLedger(t *testing.T) {
	for _, c := range []struct {
		name, purged string
		lost         int
	}{
		// At least 5: the session's creation and 3 appends, its session
		// scope's put (and the sections of an append that came later).
		{"head", "s1", 5},
		{"middle", "s3", 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := startHealthNode(t, nil)
			ctx := context.Background()
			for _, id := range []string{"s1", "s2", "s3", "s4"} {
				h.session(t, id, "u-"+id, 3)
			}
			h.check(t, "before", 200)
			if _, err := h.c.EraseSession(ctx, "s2", "test: a legitimate erase in the same interval"); err != nil {
				t.Fatal(err)
			}
			h.removalsDone(t, 1)
			st, err := h.js.Stream(ctx, events.StreamName)
			if err != nil {
				t.Fatal(err)
			}
			lost := 0
			for _, subj := range []string{events.SessionSubject(c.purged), events.ScopeSubject("session_scope", c.purged)} {
				// Counted, not assumed: an append whose sections land
				// later writes a batch of its own when they change.
				info, err := st.Info(ctx, jetstream.WithSubjectFilter(subj))
				if err != nil {
					t.Fatal(err)
				}
				lost += int(info.State.Subjects[subj])
				if err := st.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
					t.Fatal(err)
				}
			}
			if lost < c.lost {
				t.Fatalf("%d messages on the purged subjects, want at least %d", lost, c.lost)
			}
			body := h.check(t, "after a purge the ledger does not list", 503)
			detail := fmt.Sprint(body["log"])
			if !strings.Contains(detail, fmt.Sprintf("lost %d messages", lost)) {
				t.Errorf("/healthz log part %s, want it to name the %d messages lost", detail, lost)
			}
			// The loss stays reported.
			h.session(t, "s5", "u5", 1)
			h.check(t, "later", 503)
		})
	}
}
