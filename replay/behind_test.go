package replay

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/projections"
)

// lagging turns the fixture's projection into one that a projector
// stopped `by` sequences before the log's end would hold: rebuilt from the
// log up to that sequence. It returns the data dir and the log's last seq.
func lagging(t *testing.T, by uint64) (string, uint64) {
	t.Helper()
	var last uint64
	dir := onCopy(t, func(ctx context.Context, dir string, js jetstream.JetStream, s jetstream.Stream) error {
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		last = info.State.LastSeq
		_, err = projections.Rebuild(ctx, js, "MEM", filepath.Join(dir, ProjectionFile), events.NewCodec(), nil,
			projections.WithUpTo(last-by))
		return err
	})
	return dir, last
}

// TestVerifyBehind: a projection that only lags the log (as a killed
// node's does) is reported "BEHIND by N" with its own exit status (4), not
// as differing; the same projection with a damaged bucket still DIFFERS
// (exit 1).
func TestVerifyBehind(t *testing.T) {
	const by = 3
	dir, last := lagging(t, by)
	var out bytes.Buffer
	err := Run(context.Background(), []string{"verify", "--data-dir", dir}, &out, &out)
	if !errors.Is(err, ErrBehind) || errors.Is(err, ErrDiffers) || ExitCode(err) != 4 {
		t.Fatalf("verify of a lagging projection: %v (exit %d), want ErrBehind, exit 4\n%s", err, ExitCode(err), out.String())
	}
	if want := "BEHIND by 3"; !strings.Contains(out.String(), want) || strings.Contains(out.String(), "DIFFERS") {
		t.Fatalf("report does not say %q alone:\n%s", want, out.String())
	}
	t.Logf("%s", strings.TrimSpace(out.String()))

	deleteSwapMessage(t, dir, (*bolt.Cursor).Last)
	out.Reset()
	err = Run(context.Background(), []string{"verify", "--data-dir", dir}, &out, &out)
	if !errors.Is(err, ErrDiffers) || ExitCode(err) != 1 {
		t.Fatalf("verify of a lagging, damaged projection: %v (exit %d), want ErrDiffers, exit 1\n%s", err, ExitCode(err), out.String())
	}
	if !strings.Contains(out.String(), "swap_messages: differs") || !strings.Contains(out.String(), "not only lags") {
		t.Fatalf("report:\n%s", out.String())
	}
	t.Logf("%s (log ends at %d)", strings.TrimSpace(out.String()), last)
}
