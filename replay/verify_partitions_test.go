package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// partitionedDataDir is a copy of the node fixture's data dir with the log
// moved to six partitions and its projection made by a node of six
// partitions (the projector catching up on the six streams at once, then
// following a few more writes), the node stopped.
func partitionedDataDir(t *testing.T) (string, *fixture) {
	t.Helper()
	f := nodeFixture(t)
	dir := copyFixture(t)
	ctx := context.Background()
	var out bytes.Buffer
	if err := Run(ctx, []string{"migrate-log", "--data-dir", dir, "--partitions", "6"}, &out, io.Discard); err != nil {
		t.Fatalf("migrate-log --partitions 6: %v\n%s", err, out.String())
	}
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr, cfg.LogWindow, cfg.LogPartitions = dir, "127.0.0.1:-1", "", 0, 6
	n, err := node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("node of six partitions: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = n.Shutdown(ctx)
		}
	}()
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := client.New(nc)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.WaitProjected(wctx, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	for i, id := range f.sessions {
		if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("the partition check %d passed", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.WaitProjected(wctx, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// Writes made after the appends (by the actors themselves) may be
	// unapplied at the stop: a node started again applies everything
	// stored when it started.
	if n, err = node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	err = n.WaitProjected(wctx, ^uint64(0))
	if serr := n.Shutdown(ctx); err == nil {
		err = serr
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir, f
}

// TestVerifyPartitions: verify of a projection of six partitions made by
// a node (the partitions applied concurrently) compares each partition up
// to its checkpoint with a rebuild (the partitions applied one after the
// other): identical; damaged, it differs.
func TestVerifyPartitions(t *testing.T) {
	dir, _ := partitionedDataDir(t)
	var out bytes.Buffer
	res, err := Verify(context.Background(), VerifyConfig{Conn: Conn{DataDir: dir}}, &out)
	if err != nil {
		t.Fatalf("verify a node-written projection of six partitions: %v\n%s", err, out.String())
	}
	t.Logf("%s", strings.TrimSpace(out.String()))
	if len(res.Differences) != 0 || len(res.LiveSeqs) != 6 || fmt.Sprint(res.LiveSeqs) != fmt.Sprint(res.RebuiltSeqs) ||
		fmt.Sprint(res.LiveSeqs) != fmt.Sprint(res.LogSeqs) {
		t.Fatalf("differences %v, checkpoints live %v rebuilt %v log %v", res.Differences, res.LiveSeqs, res.RebuiltSeqs, res.LogSeqs)
	}
	if !strings.Contains(out.String(), "OK:") || !strings.Contains(out.String(), "6 partitions") {
		t.Fatalf("report:\n%s", out.String())
	}

	deleteSwapMessage(t, dir, (*bolt.Cursor).Last)
	out.Reset()
	err = Run(context.Background(), []string{"verify", "--data-dir", dir}, &out, &out)
	if !errors.Is(err, ErrDiffers) || !strings.Contains(out.String(), "swap_messages: differs") {
		t.Fatalf("verify after the damage: %v, want ErrDiffers naming swap_messages\n%s", err, out.String())
	}
}
