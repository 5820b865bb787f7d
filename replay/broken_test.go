package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/projections"
)

// brokenCopy copies the fixture and damages its stream with an embedded
// server that is stopped again before it returns.
func brokenCopy(t *testing.T, damage func(ctx context.Context, js jetstream.JetStream, s jetstream.Stream) error) string {
	t.Helper()
	return onCopy(t, func(ctx context.Context, _ string, js jetstream.JetStream, s jetstream.Stream) error {
		return damage(ctx, js, s)
	})
}

// onCopy copies the fixture and runs fn on it (its data dir, and its log
// stream served by an embedded server that is stopped again before onCopy
// returns the dir).
func onCopy(t *testing.T, fn func(ctx context.Context, dir string, js jetstream.JetStream, s jetstream.Stream) error) string {
	t.Helper()
	dir := copyFixture(t)
	cfg := natsembed.DefaultConfig()
	cfg.DataDir = filepath.Join(dir, JetStreamDir)
	cfg.Listen = "127.0.0.1:-1"
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
	if err := fn(ctx, dir, js, s); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runBounded runs the command line as cmd/replay does and checks that it
// fails within 30 s with kind and exit status 3; it returns the error.
func runBounded(t *testing.T, kind error, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	began := time.Now()
	err := Run(ctx, args, &out, &out)
	if !errors.Is(err, kind) || ExitCode(err) != 3 {
		t.Fatalf("%s: %v (exit %d) after %v, want %v and exit 3\n%s", strings.Join(args, " "), err, ExitCode(err), time.Since(began), kind, out.String())
	}
	t.Logf("%s: exit %d after %v: %v", args[0], ExitCode(err), time.Since(began).Round(time.Millisecond), err)
	return err
}

// TestVerifyGap: the reported hang. The subject of the log's last message
// is purged, so the sequences of one session are missing in the middle and
// at the tail; verify used to wait forever for the last one ("100 % … ETA
// 2s"). It now fails at once naming the missing sequences and exits 3;
// rebuild too, leaving the live projection as it was.
func TestVerifyGap(t *testing.T) {
	f := nodeFixture(t)
	var subject string
	dir := brokenCopy(t, func(ctx context.Context, _ jetstream.JetStream, s jetstream.Stream) error {
		m, err := s.GetMsg(ctx, f.lastSeq)
		if err != nil {
			return err
		}
		subject = m.Subject
		return s.Purge(ctx, jetstream.WithPurgeSubject(subject))
	})
	before, beforeSeq, err := digest(filepath.Join(dir, ProjectionFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"verify", "--data-dir", dir, "--idle-timeout", "2s"},
		{"verify", "--data-dir", dir}, // the default timeout is bounded too
		{"rebuild", "--data-dir", dir, "--idle-timeout", "2s"},
	} {
		err := runBounded(t, projections.ErrLogGap, args...)
		if !strings.Contains(err.Error(), "stream MEM has a gap: ") ||
			!strings.Contains(err.Error(), fmt.Sprintf("missing (first 1, last %d)", f.lastSeq)) {
			t.Errorf("%s: %q does not describe the gap", args[0], err)
		}
	}
	after, afterSeq, err := digest(filepath.Join(dir, ProjectionFile))
	if err != nil {
		t.Fatal(err)
	}
	if d := projections.VerifyDigests(before, after); len(d) > 0 || afterSeq != beforeSeq {
		t.Errorf("a refused rebuild changed the live projection: %v", d)
	}
}

// TestVerifyDeletedStream: verify and rebuild on a data dir whose stream was
// deleted fail at once with ErrNoStream, exit 3.
func TestVerifyDeletedStream(t *testing.T) {
	dir := brokenCopy(t, func(ctx context.Context, js jetstream.JetStream, _ jetstream.Stream) error {
		return js.DeleteStream(ctx, "MEM")
	})
	for _, cmd := range []string{"verify", "rebuild"} {
		err := runBounded(t, ErrNoStream, cmd, "--data-dir", dir, "--idle-timeout", "2s")
		if !strings.Contains(err.Error(), "MEM") {
			t.Errorf("%s: %q does not name the stream", cmd, err)
		}
	}
}

// TestVerifyTruncated: a log whose head was purged is refused, exit 3.
func TestVerifyTruncated(t *testing.T) {
	f := nodeFixture(t)
	dir := brokenCopy(t, func(ctx context.Context, _ jetstream.JetStream, s jetstream.Stream) error {
		return s.Purge(ctx, jetstream.WithPurgeKeep(10))
	})
	err := runBounded(t, projections.ErrLogTruncated, "verify", "--data-dir", dir, "--idle-timeout", "2s")
	want := fmt.Sprintf("stream MEM is truncated: sequences 1..%d purged (first %d, last %d)", f.lastSeq-10, f.lastSeq-9, f.lastSeq)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not contain %q", err, want)
	}
}

// deleteSwapMessage deletes one record of the projection's swap_messages
// bucket (the one pick finds): a damaged projection.
func deleteSwapMessage(t *testing.T, dir string, pick func(*bolt.Cursor) ([]byte, []byte)) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, ProjectionFile), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("swap_messages"))
		if b == nil {
			return errors.New("no bucket swap_messages")
		}
		k, _ := pick(b.Cursor())
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
}
