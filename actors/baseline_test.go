package actors

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func (h *harness) scope(t *testing.T, kind sharedmem.Kind, id string, body any) (proto.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Await(ctx, func(r ReplyFunc) error { return h.dir.DispatchScope(kind, id, nil, body, r) })
}

// TestScopeActivatesFromABaseline: an entry erase killed after it purged
// the messages before its ScopeBaseline and before it stored the new
// snapshot leaves a subject that starts with the baseline (at version 3
// here) and no snapshot. The scope activates from it (the baseline
// restates the whole state: nothing before it is needed), so the erase
// can be resumed; before, activation failed for ever ("batch version 3,
// want 1"), found by the erase fault run (TestEraseUserKilledAtEachStep).
func TestScopeActivatesFromABaseline(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	lcfg := events.DefaultJetStreamConfig()
	lcfg.DenyPurge = false
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := newHarnessOn(t, nc, lcfg, logger, nil) // no snapshot before 100 batches
	for _, k := range []string{"gone", "kept"} {
		if _, err := h.scope(t, sharedmem.KindAgent, "a1", &memoryv1.PutEntryRequest{Key: k, Value: []byte("v " + k)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.scope(t, sharedmem.KindAgent, "a1", &memoryv1.EraseAggregate{RemovalId: "r1", Key: "gone"}); err != nil {
		t.Fatal(err)
	}
	// The state the kill leaves: the snapshot the erase stored is not there.
	ctx := context.Background()
	if err := h.dir.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.snaps.Delete(ctx, "agent.a1"); err != nil {
		t.Fatal(err)
	}
	h2 := newHarnessOn(t, nc, lcfg, logger, nil)
	var rej interface{ Status() (int, string, string) }
	if _, err := h2.scope(t, sharedmem.KindAgent, "a1", &memoryv1.GetEntryRequest{Key: "gone"}); !errors.As(err, &rej) || statusCode(rej) != 404 {
		t.Errorf("the erased key after activating from the baseline: %v, want 404", err)
	}
	m, err := h2.scope(t, sharedmem.KindAgent, "a1", &memoryv1.GetEntryRequest{Key: "kept"})
	if err != nil || string(m.(*memoryv1.EntryReply).GetEntry().GetValue()) != "v kept" {
		t.Fatalf("the kept key after activating from the baseline: %v %v", m, err)
	}
	// And it takes writes after it, at the next version.
	if _, err := h2.scope(t, sharedmem.KindAgent, "a1", &memoryv1.PutEntryRequest{Key: "new", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
}

func statusCode(rej interface{ Status() (int, string, string) }) int {
	code, _, _ := rej.Status()
	return code
}

// TestEraseResumedAfterItsPurge: a session erase killed after it purged
// the subject and before it deleted the snapshot leaves a session whose
// snapshot is past what the log holds, which activation refuses (a purge
// underneath it). The erase resumed by its removal id still finishes:
// the snapshot deleted, the completion recorded, the session gone.
func TestEraseResumedAfterItsPurge(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	lcfg := events.DefaultJetStreamConfig()
	lcfg.DenyPurge = false
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := newHarnessOn(t, nc, lcfg, logger, func(c *Config) { c.SnapshotEvery = 1 })
	h.must(t, "p1", &memoryv1.CreateSessionRequest{})
	h.must(t, "p1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("the secret is lemur")}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for { // a snapshot exists (the put runs beside the actor)
		if _, ok, err := h.snaps.Get(ctx, "session.p1"); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.dir.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// What the erase did before the kill: its LogRemoval, the purge.
	subj := events.SessionSubject("p1")
	seqs, err := events.SubjectSeqs(ctx, h.log, subj)
	if err != nil {
		t.Fatal(err)
	}
	rm := &memoryv1.LogRemoval{Id: "r1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "session:p1",
		Subjects: []string{subj}, Removed: events.RemovalSpans(events.Spans(seqs)), Erased: []string{"session.p1"}, Messages: uint64(len(seqs))}
	rseq, err := events.AppendRemoval(ctx, h.log, h.codec, rm, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.log.RemoveSubject(ctx, subj, rseq); err != nil {
		t.Fatal(err)
	}
	h2 := newHarnessOn(t, nc, lcfg, logger, nil)
	if _, err := h2.call(t, "p1", &memoryv1.EraseAggregate{RemovalId: "r1"}); err != nil {
		t.Fatalf("the erase resumed after its purge: %v", err)
	}
	if rec, err := events.LoadRemoval(ctx, h.log, "r1"); err != nil || rec.DoneSeq == 0 {
		t.Fatalf("removal r1 after the resumption: %+v %v, want completed", rec, err)
	}
	if _, ok, err := h.snaps.Get(ctx, "session.p1"); err != nil || ok {
		t.Fatalf("p1's snapshot after the resumed erase: %v %v, want deleted", ok, err)
	}
	if _, err := h2.call(t, "p1", &memoryv1.GetSessionRequest{}); err == nil {
		t.Fatal("p1 readable after the resumed erase")
	}
}
