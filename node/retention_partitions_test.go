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
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestDeleteAfterErasesArchivedSessionsPartitions is
// TestDeleteAfterErasesArchivedSessions with the log in six partitions: a
// terminated session is archived, then erased; its messages and session
// scope leave their partition streams, the retention plan is completed in
// the stream its id hashes to and each item's removal in its aggregate's
// stream; a live session is untouched.
func TestDeleteAfterErasesArchivedSessionsPartitions(t *testing.T) {
	const after, deleteAfter = 200 * time.Millisecond, 300 * time.Millisecond
	_, nc := node.StartForTest(t, func(c *node.Config) {
		partitionedEraseConfig(c)
		c.ArchiveAfter, c.DeleteAfter = after, deleteAfter
	})
	c := client.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"old", "live"} {
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "the secret word is " + id + "-zebra"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, client.SessionScope("old"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v old-zebra")}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	pl := partitionedLog(t, js)
	subjects := []string{events.SessionSubject("old"), events.ScopeSubject("session_scope", "old")}
	for _, subj := range subjects {
		if seqs, err := events.SubjectSeqs(ctx, pl, subj); err != nil || len(seqs) == 0 {
			t.Fatalf("%s before the sweep: %v %v", subj, seqs, err)
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
			seqs, err := events.SubjectSeqs(ctx, pl, subj)
			return err == nil && len(seqs) == 0, fmt.Sprintf("%v %v", seqs, err)
		})
	}
	eventually(t, "a completed retention plan and its items, each in its stream", func() (bool, string) {
		plans, items := 0, 0
		for i, led := range partitionLedgers(t, ctx, pl) {
			for _, r := range led.Removals {
				switch {
				case r.GetTarget() != "session:old" || r.GetRequestedBy() != "node" || !r.Completed:
				case r.GetReason() == memoryv1.RemovalReason_REMOVAL_REASON_RETENTION && len(r.GetPlanned()) >= 2:
					if p, _ := pl.PartitionOf(events.RemovalSubject(r.GetId())); p != i {
						return false, fmt.Sprintf("the plan is in partition %d, its id hashes to %d", i, p)
					}
					plans++
				case len(r.GetPlanned()) == 0:
					for _, agg := range r.GetErased() {
						_, id, _ := strings.Cut(agg, ".")
						if p := events.LogPartition(id, erasePartitions); p != i {
							return false, fmt.Sprintf("the removal of %s is in partition %d, want %d", agg, i, p)
						}
					}
					items++
				}
			}
		}
		return plans == 1 && items == 2, fmt.Sprintf("%d plans, %d items", plans, items)
	})
	if held := partitionsHold(t, ctx, js, "old-zebra"); len(held) > 0 {
		t.Errorf("streams still hold the erased session: %v", held)
	}
	if live, err := c.Get(ctx, "live"); err != nil || live.GetStatus() != memoryv1.SessionStatus_SESSION_STATUS_ACTIVE {
		t.Errorf("live session after the sweep: %v %v", live.GetStatus(), err)
	}
}
