package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
)

// TestGracefulShutdown sends SIGTERM, then SIGINT (what Ctrl-C or `kill
// -INT` sends to the built binary), to a node under no load: it must exit 0
// having snapshotted every active session, and serve the same state again.
func TestGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the node binary")
	}
	bin := buildNode(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) { gracefulShutdown(t, bin, sig) })
	}
}

func gracefulShutdown(t *testing.T, bin string, sig syscall.Signal) {
	dataDir, addr := t.TempDir(), freePort(t)
	cmd := startNode(t, bin, dataDir, addr)
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(nc)
	ctx := context.Background()
	const sessions = 5
	for i := range sessions {
		id := fmt.Sprintf("g%d", i)
		if _, err := c.CreateSession(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, message(i)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := c.Context(ctx, "g3")
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("node exited with %v after %v, want exit 0", err, sig)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("node did not exit within 20s of %v", sig)
	}

	startNode(t, bin, dataDir, addr)
	nc, err = nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, "MEM_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	for i := range sessions {
		if _, err := kv.Get(ctx, fmt.Sprintf("session.g%d", i)); err != nil {
			t.Errorf("no snapshot of g%d after a graceful shutdown: %v", i, err)
		}
	}
	after, err := client.New(nc).Context(ctx, "g3")
	if err != nil {
		t.Fatal(err)
	}
	if after.GetVersion() != before.GetVersion() || len(after.GetMessages()) != len(before.GetMessages()) {
		t.Fatalf("context after restart %v, before %v", after, before)
	}
}
