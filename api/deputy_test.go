package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestReplySubjectIsNeverADeputy sends requests whose reply subject names the
// node's own spaces (the log, the JetStream API, another agent's endpoint,
// the KV and object-store subjects): none of them is answered, so nothing the
// node could publish there with its own credentials changes the log. The
// stream's message count and the victim's entries are compared before and
// after; the service keeps answering ordinary requests.
func TestReplySubjectIsNeverADeputy(t *testing.T) {
	_, nc := node.StartForTest(t, nil)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.Put(ctx, client.Agent("victim"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	info := func() jetstream.StreamState {
		t.Helper()
		st, err := js.Stream(ctx, "MEM")
		if err != nil {
			t.Fatalf("stream MEM: %v", err)
		}
		i, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return i.State
	}
	before := info()
	getBody, _ := proto.Marshal(&memoryv1.GetEntryRequest{Key: "k"})
	delBody, _ := proto.Marshal(&memoryv1.DeleteEntryRequest{Key: "k"})
	replies := []string{
		"$JS.API.STREAM.PURGE.MEM", "$JS.API.STREAM.DELETE.MEM", "$JS.API.STREAM.DELETE.OBJ_MEM_DATA",
		"mem.ev.agent.victim", "mem.v1.agent.victim.delete", "$KV.MEM_SNAPSHOTS.agent.victim",
		"$O.MEM_DATA.M.x", "$SRV.PING", "plain.subject",
	}
	for _, reply := range replies {
		for _, req := range []struct {
			subject string
			body    []byte
		}{
			{"mem.v1.agent.attacker.get", getBody},
			{"mem.v1.agent.victim.delete", delBody}, // refused before any work
			{"mem.v1.session.bad.id.append", nil},   // the malformed-subject endpoint too
		} {
			if err := nc.PublishMsg(&nats.Msg{Subject: req.subject, Reply: reply, Data: req.body}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The micro library's own $SRV handlers answer any reply subject: the
	// service connection's NATS permissions (replies only) stop them.
	for _, reply := range replies {
		for _, subject := range []string{"$SRV.PING", "$SRV.INFO", "$SRV.STATS", "$SRV.PING.memory", "$SRV.INFO.memory"} {
			if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The service answers in order per subscription: one ordinary request
	// after the attack means the attack requests were handled (or dropped).
	time.Sleep(100 * time.Millisecond)
	got, err := c.GetEntry(ctx, client.Agent("victim"), "k", 0)
	if err != nil {
		t.Fatalf("victim's entry after the attack: %v", err)
	}
	if string(got.GetValue()) != "v" || got.GetVersion() != 1 || got.GetDeleted() {
		t.Fatalf("victim's entry changed: %v", got)
	}
	after := info()
	if after.Msgs != before.Msgs || after.LastSeq != before.LastSeq || after.FirstSeq != before.FirstSeq {
		t.Fatalf("stream changed under the attack: before %+v after %+v", before, after)
	}
}
