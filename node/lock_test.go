package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/dirlock"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig(dir string) node.Config {
	cfg := node.DefaultConfig()
	cfg.DataDir = dir
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.HTTPAddr = ""
	return cfg
}

// TestSecondNodeOnDataDirFails: a second node on a data dir in use (here
// without a projector, the reported case) fails before opening the store,
// naming the holder; the first node goes on serving.
func TestSecondNodeOnDataDirFails(t *testing.T) {
	var dir string
	_, nc := node.StartForTest(t, func(c *node.Config) { dir = c.DataDir })
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "l1", nil); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(dir)
	cfg.Projector = false
	n2, err := node.Start(ctx, cfg, quietLogger())
	if err == nil {
		_ = n2.Shutdown(ctx)
		t.Fatal("a second node started on a data dir in use")
	}
	if !errors.Is(err, dirlock.ErrLocked) {
		t.Fatalf("second node: %v, want dirlock.ErrLocked", err)
	}
	if want := fmt.Sprintf("is in use by pid %d", os.Getpid()); !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), node.LockWhat) {
		t.Errorf("error %q does not name the holder", err)
	}
	t.Log(err)

	if _, err := c.AppendMessages(ctx, "l1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "still here"}); err != nil {
		t.Fatalf("first node after the refused start: %v", err)
	}
}

// TestDataDirReleasedOnShutdown: Shutdown (idempotent) releases the lock
// and a new node starts on the same dir.
func TestDataDirReleasedOnShutdown(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	n1, err := node.Start(ctx, testConfig(dir), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := n1.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	n2, err := node.Start(ctx, testConfig(dir), quietLogger())
	if err != nil {
		t.Fatalf("start after the first node's shutdown: %v", err)
	}
	if err := n2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestBusyNATSPort: a taken --nats-listen fails Start at once with
// natsembed.ErrAddrInUse, and the failed start released the data dir.
func TestBusyNATSPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	ctx := context.Background()
	cfg := testConfig(dir)
	cfg.NATSListen = ln.Addr().String()
	began := time.Now()
	n, err := node.Start(ctx, cfg, quietLogger())
	if err == nil {
		_ = n.Shutdown(ctx)
		t.Fatal("node started on a taken port")
	}
	if !errors.Is(err, natsembed.ErrAddrInUse) {
		t.Fatalf("Start = %v, want natsembed.ErrAddrInUse", err)
	}
	if el := time.Since(began); el > 5*time.Second { // generous: it fails in milliseconds
		t.Errorf("Start took %v to fail", el)
	}
	t.Log(err)
	n, err = node.Start(ctx, testConfig(dir), quietLogger())
	if err != nil {
		t.Fatalf("start after a failed start: %v", err)
	}
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}
