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
