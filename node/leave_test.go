package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestLeavingNodeServesLateForwards: the other nodes forward requests to a
// leaving node until their watch of the placement shows its partitions
// handed over, a little after it deleted their leases. Those late forwards
// are served (sent on to the new owner) for as long as they keep coming:
// the node unsubscribes only once they stopped. On a cluster a forward
// sent while its target unsubscribes is lost without an answer (the
// sender's server still routes it to the target's server), and the sender
// waits for its forward timeout (30 s): in TestRollingHandover a stopping
// node's drain then waited on requests it had forwarded, and an
// acknowledged append took 8.4 s (the client's timeout, then a retry).
// Here b's peers' view lags staleView behind the hand-over: a request
// forwarded to b meanwhile is answered, never refused for want of a
// subscriber.
func TestLeavingNodeServesLateForwards(t *testing.T) {
	const staleView = 500 * time.Millisecond
	a, b, nc := startPair(t)
	var id string
	for i := 0; id == ""; i++ {
		if s := fmt.Sprintf("late%d", i); b.Serves(s) {
			id = s
		}
	}
	ctx := context.Background()
	if _, err := client.New(nc).CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u"}); err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(&memoryv1.ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	forward := func() error {
		m, err := nc.RequestMsg(&nats.Msg{Subject: "_AMN.fwd." + b.NodeID() + ".mem.v1.session." + id + ".context", Data: data}, 10*time.Second)
		if err != nil {
			return err
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
			return fmt.Errorf("error %s: %s", code, m.Header.Get("Nats-Service-Error"))
		}
		return nil
	}
	if err := forward(); err != nil {
		t.Fatalf("a request forwarded to b before it leaves: %v", err)
	}

	stopped := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		stopped <- b.Shutdown(sctx)
	}()
	for b.Serves(id) {
		time.Sleep(time.Millisecond)
	}
	handedOver := time.Now()
	sent := 0
	for time.Since(handedOver) < staleView {
		sent++
		if err := forward(); err != nil {
			t.Fatalf("forward %d, %s after b began handing over: %v", sent, time.Since(handedOver).Round(time.Millisecond), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("b's shutdown: %v", err)
	}
	if !a.Serves(id) {
		t.Fatalf("%s not served by a after b left", id)
	}
	t.Logf("%d late forwards answered over %s", sent, staleView)
}
