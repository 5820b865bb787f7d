package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestDeleteAfterErasesArchivedSessions: with --archive-after and
// --delete-after, a terminated session is archived, then erased: its
// messages and its session scope leave the log (a content-free plan with
// reason RETENTION, requested by "node", and one removal per item record
// it), it answers 404, and a live session is untouched.
func TestDeleteAfterErasesArchivedSessions(t *testing.T) {
	const after, deleteAfter = 200 * time.Millisecond, 300 * time.Millisecond
	_, nc := node.StartForTest(t, func(c *node.Config) { c.ArchiveAfter, c.DeleteAfter = after, deleteAfter })
	c := client.New(nc)
	ctx := context.Background()
	for _, id := range []string{"old", "live"} {
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "the secret word is " + id + "-zebra"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, client.SessionScope("old"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	subjects := []string{events.SessionSubject("old"), events.ScopeSubject("session_scope", "old")}
	for _, subj := range subjects {
		if _, err := s.GetLastMsgForSubject(ctx, subj); err != nil {
			t.Fatalf("%s before the sweep: %v", subj, err)
		}
	}
	if _, err := c.SetStatus(ctx, "old", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "erase of the archived session", func() (bool, string) {
		_, err := c.Get(ctx, "old")
		return client.Code(err) == 404, "get: " + errString(err)
	})
	for _, subj := range subjects {
		eventually(t, "purge of "+subj, func() (bool, string) {
			_, err := s.GetLastMsgForSubject(ctx, subj)
			return err != nil, errString(err)
		})
	}
	l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	var led *events.Ledger
	eventually(t, "a completed retention plan and its items", func() (bool, string) {
		led, err = events.ReadLedger(ctx, l, 0)
		if err != nil {
			return false, err.Error()
		}
		plans, items := 0, 0
		for _, r := range led.Removals {
			switch {
			case r.GetTarget() != "session:old" || r.GetRequestedBy() != "node" || !r.Completed:
			case r.GetReason() == memoryv1.RemovalReason_REMOVAL_REASON_RETENTION && len(r.GetPlanned()) >= 2:
				plans++
			case len(r.GetPlanned()) == 0:
				items++
			}
		}
		return plans == 1 && items == 2, fmt.Sprintf("%d plans, %d items", plans, items)
	})
	if live, err := c.Get(ctx, "live"); err != nil || live.GetStatus() != memoryv1.SessionStatus_SESSION_STATUS_ACTIVE {
		t.Errorf("live session after the sweep: %v %v", live.GetStatus(), err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
