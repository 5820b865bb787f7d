package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/dirlock"
	"github.com/agentmem/agentmem/node"
)

// TestRunningNodeDataDirRefused: with --data-dir of a running node every
// command that would start an embedded server on its store fails at once
// (no bbolt timeout, no second server), naming the node; once the node is
// stopped the same command works.
func TestRunningNodeDataDirRefused(t *testing.T) {
	dir := copyFixture(t)
	cfg := node.DefaultConfig()
	cfg.DataDir = dir
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.HTTPAddr = ""
	ctx := context.Background()
	n, err := node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(ctx)

	for _, args := range [][]string{
		{"verify", "--data-dir", dir},
		{"rebuild", "--data-dir", dir},
		{"stats", "--data-dir", dir},
		{"export", "--data-dir", dir, "--out", os.DevNull},
		{"inspect", "session", "s1", "--data-dir", dir},
		{"migrate-log", "--data-dir", dir},
	} {
		var out bytes.Buffer
		began := time.Now()
		err := Run(ctx, args, &out, &out)
		if !errors.Is(err, dirlock.ErrLocked) || ExitCode(err) == 0 {
			t.Errorf("%s on a running node's dir: %v (exit %d), want dirlock.ErrLocked", args[0], err, ExitCode(err))
			continue
		}
		want := fmt.Sprintf("data dir %s is in use by pid %d", dir, os.Getpid())
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), node.LockWhat) {
			t.Errorf("%s: %q does not name the node", args[0], err)
		}
		if el := time.Since(began); el > 3*time.Second { // generous: it fails in milliseconds
			t.Errorf("%s took %v to fail", args[0], el)
		}
	}

	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(ctx, []string{"verify", "--data-dir", dir}, &out, &out); err != nil {
		t.Fatalf("verify after the node stopped: %v\n%s", err, out.String())
	}
}
