package node

import (
	"context"
	"errors"
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

// Kill stops the node as a crash would, as far as the cluster can tell: its
// NATS connections close at once, so nothing is handed over and no lease is
// refreshed again (they age out), then what is left in the process is
// stopped. For tests of failover in one process.
func (n *Node) Kill() {
	if n.apiNC != nil && n.apiNC != n.nc {
		n.apiNC.Close()
	}
	if n.nc != nil {
		n.nc.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = n.Shutdown(ctx)
}

// NodeID is the node's id in the cluster's placement.
func (n *Node) NodeID() string { return n.placement.NodeID() }

// Serves reports whether the node serves aggregate id now.
func (n *Node) Serves(id string) bool { return n.placement.Serves(id) }

// WaitProjectedPartitions returns once the in-process projector applied
// targets[i] in every log partition i (one target with one stream), or
// ctx ends.
func (n *Node) WaitProjectedPartitions(ctx context.Context, targets []uint64) error {
	if n.splitRM != nil {
		return n.splitRM.WaitForAll(ctx, targets)
	}
	if n.proj == nil {
		return errors.New("node: no projector in this process")
	}
	return n.proj.WaitForAll(ctx, targets)
}

// SplitPartitionsForTest lists the corpus partitions this node answers
// (split projections), and the sessions, messages and bytes in use each
// file holds.
func (n *Node) SplitPartitionsForTest() map[int][3]int64 {
	if n.split == nil {
		return nil
	}
	return n.split.census()
}
