package node_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/node"
)

// A replica count the NATS server cannot hold stops the node at start with
// a message that says what to do (issue 9: "refuses to start with a
// replica count the cluster cannot satisfy, with a clear message").
func TestReplicasTheServerCannotHold(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.HTTPAddr = ""
	cfg.Replicas = 3
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if n != nil {
		defer func() { _ = n.Shutdown(context.Background()) }()
	}
	if err == nil || !strings.Contains(err.Error(), "--replicas 3 needs a JetStream cluster of at least 3 servers") {
		t.Fatalf("start with --replicas 3 on the embedded server: %v", err)
	}
}
