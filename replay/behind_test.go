package replay

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/projections"
)

// lagging turns the fixture's projection into one that a projector
// stopped `by` sequences before the log's end would hold: rebuilt from the
// log up to that sequence. It returns the data dir and the log's last seq.
func lagging(t *testing.T, by uint64) (string, uint64) {
	t.Helper()
	dir := copyFixture(t)
	cfg := natsembed.DefaultConfig()
	cfg.DataDir, cfg.Listen = filepath.Join(dir, JetStreamDir), "127.0.0.1:-1"
	srv, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "MEM")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := info.State.LastSeq
	if _, err := projections.Rebuild(ctx, js, "MEM", filepath.Join(dir, ProjectionFile), events.NewCodec(), nil,
		projections.WithUpTo(last-by)); err != nil {
		t.Fatal(err)
	}
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

	db, err := bolt.Open(filepath.Join(dir, ProjectionFile), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("swap_messages"))
		if b == nil {
			return errors.New("no bucket swap_messages")
		}
		k, _ := b.Cursor().Last()
		if k == nil {
			return errors.New("swap_messages is empty")
		}
		return b.Delete(k)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
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
