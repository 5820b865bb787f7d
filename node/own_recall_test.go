package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestRecallOwnByReference: on a real node, a turn of the session's own
// swap recalled into its context is recorded in the log as a reference
// (no text in the ContextAssembled event); the context read shows its
// "Recalled …" text, and time travel to that point reads the same text
// back from the session's log: the past context equals the live one.
func TestRecallOwnByReference(t *testing.T) {
	n, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	const id, fact = "ownref", "The vault code for the Lisbon office is 7731."
	if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{MaxContextTokens: 1500, ReservedOutputTokens: 500}); err != nil {
		t.Fatal(err)
	}
	seq := fillSession(t, ctx, c, id, fact)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.WaitProjected(wctx, seq); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, id, userMsg("What is the vault code for the Lisbon office?")); err != nil {
		t.Fatal(err)
	}
	live, err := c.Context(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec := layerText(live, "recalled"); !strings.Contains(rec, "Recalled m1 (user, turn 1, ") || !strings.Contains(rec, fact) {
		t.Fatalf("the context does not recall the planted turn:\n%s", rec)
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := events.OpenJetStreamLog(js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}
	codec := events.NewCodec()
	// The log's ContextAssembled events hold no text of the turns they
	// recall.
	assembled := 0
	if _, err := l.Load(ctx, events.SessionSubject(id), 0, func(r events.Record) error {
		b, err := events.DecodeBatch(r.Data)
		if err != nil {
			return err
		}
		evs, err := codec.Unpack(b)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ca, ok := ev.(*memoryv1.ContextAssembled); ok && len(ca.GetSections().GetRecalled()) > 0 {
				assembled++
				raw, err := proto.Marshal(ca)
				if err != nil {
					return err
				}
				if strings.Contains(string(raw), "7731") || strings.Contains(string(raw), "Recalled ") {
					t.Errorf("a ContextAssembled event holds recalled text: %v", ca)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if assembled == 0 {
		t.Fatal("the log holds no ContextAssembled with a recalled item")
	}

	p, err := actors.SessionAt(ctx, l, codec, id, actors.Point{Seq: live.GetSeq()})
	if err != nil {
		t.Fatal(err)
	}
	past, err := actors.ContextAt(ctx, l, nil, codec, p)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(past.GetLayers(), live.GetLayers()) || !proto.Equal(past.GetUsage(), live.GetUsage()) || len(past.GetMessages()) != len(live.GetMessages()) {
		t.Fatalf("time travel: %v %v, %d messages; live: %v %v, %d messages", past.GetLayers(), past.GetUsage(), len(past.GetMessages()),
			live.GetLayers(), live.GetUsage(), len(live.GetMessages()))
	}
	for i, m := range past.GetMessages() {
		if !proto.Equal(m, live.GetMessages()[i]) {
			t.Errorf("message %d: time travel %v, live %v", i, m, live.GetMessages()[i])
		}
	}
}
