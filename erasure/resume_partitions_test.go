package erasure

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// completingActors answer an entry erase as the scope's actor does: its
// removal, recorded in the aggregate's stream (ledger), is completed there.
type completingActors struct {
	ledger events.Log
	codec  *events.Codec
	calls  []string
}

func (a *completingActors) Dispatch(string, *tenancy.Caller, any, actors.ReplyFunc) error {
	panic("no session in this test")
}

func (a *completingActors) DispatchScope(kind sharedmem.Kind, id string, _ *tenancy.Caller, body any, reply actors.ReplyFunc) error {
	b := body.(*memoryv1.EraseAggregate)
	a.calls = append(a.calls, string(kind)+":"+id+" "+b.GetRemovalId())
	ctx := context.Background()
	rec, err := events.LoadRemoval(ctx, a.ledger, b.GetRemovalId())
	if err == nil && rec.DoneSeq == 0 {
		rec.DoneSeq, err = events.CompleteRemoval(ctx, a.ledger, a.codec, b.GetRemovalId(), rec.RemovalSeq, time.Now())
	}
	go reply(&memoryv1.EraseReceipt{RemovalId: b.GetRemovalId(), RemovalSeq: rec.DoneSeq}, err)
	return nil
}

// TestResumePartitionsPlansFirst: with the log in partitions a plan's
// item may be recorded in a stream before the plan's. An entry erase is
// resumed only by its plan (with its key's digest), so ResumePartitions
// finishes every stream's pending plans before the removals of their own:
// stream 0's pending entry rewrite is finished by stream 1's plan, both
// end completed, and a second pass reads past them.
func TestResumePartitionsPlansFirst(t *testing.T) {
	ctx := context.Background()
	codec := events.NewCodec()
	s0, s1 := events.NewMemLog(), events.NewMemLog()
	now := time.Now()
	it := EntryItem(sharedmem.KindAgent, "a1", "pref")
	plan := &memoryv1.LogRemoval{Id: "plan1", Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE, Target: "entry:agent:a1:pref",
		Planned: []string{it.String()}}
	item := &memoryv1.LogRemoval{Id: ItemRemovalID("plan1", it), Reason: memoryv1.RemovalReason_REMOVAL_REASON_ERASE,
		Target: plan.GetTarget(), Subjects: []string{events.AgentSubject("a1")}, Rewritten: []string{"agent.a1"}}
	if _, err := events.AppendRemoval(ctx, s0, codec, item, now); err != nil {
		t.Fatal(err)
	}
	if _, err := events.AppendRemoval(ctx, s1, codec, plan, now); err != nil {
		t.Fatal(err)
	}
	act := &completingActors{ledger: s0, codec: codec}
	c, err := New(Config{}, Deps{Log: s1, Reader: s1, Codec: codec, Actors: act, Streams: []Stream{s0, s1}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ResumePartitions(ctx, nil)
	if err != nil {
		t.Fatalf("resume: %v (actors called: %v)", err, act.calls)
	}
	if len(act.calls) != 1 || act.calls[0] != "agent:a1 "+item.GetId() {
		t.Errorf("actors called %v, want the entry's removal once", act.calls)
	}
	for i, st := range []events.StreamReader{s0, s1} {
		led, err := events.ReadLedger(ctx, st, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(led.Removals) != 1 || len(led.Pending()) != 0 {
			t.Errorf("stream %d: %d removals, %d pending; want 1 completed", i, len(led.Removals), len(led.Pending()))
		}
		if res[i].Next != led.Last+1 {
			t.Errorf("stream %d: next pass from %d, want %d", i, res[i].Next, led.Last+1)
		}
	}
	if res[1].Removals != 1 {
		t.Errorf("stream 1 resumed %d removals, want its plan", res[1].Removals)
	}
	again, err := c.ResumePartitions(ctx, []uint64{res[0].Next, res[1].Next})
	if err != nil || again[0].Removals+again[1].Removals != 0 || len(act.calls) != 1 {
		t.Errorf("a second pass: %+v %v, actors called %v", again, err, act.calls)
	}
}
