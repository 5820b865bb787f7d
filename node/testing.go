package node

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// StartForTest starts a node with an embedded NATS on a random loopback port,
// data under t.TempDir() and no metrics listener; mutate (optional) adjusts
// the config. It returns the node and a client connection; both are stopped
// by t.Cleanup.
func StartForTest(t testing.TB, mutate func(*Config)) (*Node, *nats.Conn) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.HTTPAddr = ""
	if mutate != nil {
		mutate(&cfg)
	}
	n, err := Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("node: start: %v", err)
	}
	var opts []nats.Option
	if cfg.NATSUser != "" {
		opts = append(opts, nats.UserInfo(cfg.NATSUser, cfg.NATSPassword))
	}
	nc, err := nats.Connect(n.ClientURL(), opts...)
	if err != nil {
		_ = n.Shutdown(context.Background())
		t.Fatalf("node: connect: %v", err)
	}
	t.Cleanup(func() {
		nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("node: shutdown: %v", err)
		}
	})
	return n, nc
}
