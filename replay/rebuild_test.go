package replay

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/projections"
	bolt "go.etcd.io/bbolt"
)

// TestRebuild rebuilds a node's projection through the command line, over a
// leftover of an interrupted run, and checks the summary and the file.
func TestRebuild(t *testing.T) {
	f := nodeFixture(t)
	dir := copyFixture(t)
	live := filepath.Join(dir, ProjectionFile)
	liveDigest, _, err := digest(live)
	if err != nil {
		t.Fatal(err)
	}
	// An interrupted run leaves a half-written file aside: the next run starts over.
	if err := os.WriteFile(live+".rebuild", []byte("half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"rebuild", "--data-dir", dir}, &out, &errOut); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	t.Logf("%s", strings.TrimSpace(out.String()))
	if !strings.Contains(out.String(), "events/s") {
		t.Errorf("summary without a rate: %q", out.String())
	}
	if _, err := os.Stat(live + ".rebuild"); !os.IsNotExist(err) {
		t.Errorf("leftover still there: %v", err)
	}
	d, seq, err := digest(live)
	if err != nil {
		t.Fatal(err)
	}
	if seq != f.lastSeq {
		t.Errorf("checkpoint %d, want %d", seq, f.lastSeq)
	}
	if diff := projections.VerifyDigests(liveDigest, d); len(diff) > 0 {
		t.Errorf("rebuilt file differs from the node's: %v", diff)
	}
}

// TestRebuildProgressBar: on a terminal the bar renders with the count and rate.
func TestRebuildProgressBar(t *testing.T) {
	f := nodeFixture(t)
	conn := serve(t, f.dir)
	var out, bar bytes.Buffer
	st, err := Rebuild(context.Background(), RebuildConfig{Conn: conn, Out: filepath.Join(t.TempDir(), "p.db"), Progress: &bar, ProgressTTY: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != uint64(f.batches) {
		t.Errorf("events %d, want %d", st.Events, f.batches)
	}
	if !strings.Contains(bar.String(), "events") || !strings.Contains(bar.String(), "rebuild") {
		t.Errorf("bar output %q", bar.String())
	}
}

// TestProgressLines: off a terminal, one line per second with rate and ETA.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	p := newProgress(&buf, false, "rebuild", func() time.Time { return now })
	for i := uint64(1); i <= 40; i++ {
		now = now.Add(250 * time.Millisecond) // 4 callbacks a second
		p.update(i*100, 8000)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 10 { // 10 s of callbacks
		t.Fatalf("%d lines, want 10:\n%s", len(lines), buf.String())
	}
	if want := "rebuild: 4000/8000 events (50%), 400 events/s, ETA 10s"; lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
	}
}

// TestVerify: a node's own projection verifies; with a key deleted from one
// bucket, verify names that bucket and fails with ErrDiffers (exit 1).
func TestVerify(t *testing.T) {
	dir := copyFixture(t)
	var out bytes.Buffer
	res, err := Verify(context.Background(), VerifyConfig{Conn: Conn{DataDir: dir}}, &out)
	if err != nil {
		t.Fatalf("verify a node-written projection: %v\n%s", err, out.String())
	}
	if len(res.Differences) != 0 || res.LiveSeq != res.RebuiltSeq {
		t.Fatalf("differences %v, checkpoints %d/%d", res.Differences, res.LiveSeq, res.RebuiltSeq)
	}
	t.Logf("%s", strings.TrimSpace(out.String()))

	deleteSwapMessage(t, dir, (*bolt.Cursor).First)

	out.Reset()
	err = Run(context.Background(), []string{"verify", "--data-dir", dir}, &out, &out)
	if !errors.Is(err, ErrDiffers) || ExitCode(err) != 1 {
		t.Fatalf("verify after the damage: %v, want ErrDiffers", err)
	}
	if !strings.Contains(out.String(), "swap_messages: differs") {
		t.Fatalf("report does not name the bucket:\n%s", out.String())
	}
	t.Logf("%s", strings.TrimSpace(out.String()))
	ents, _ := os.ReadDir(dir)
	for _, e := range ents { // jetstream/, projection.db, LOCK: the aside directory is gone
		if strings.HasPrefix(e.Name(), ".verify-") {
			t.Errorf("verify left %s behind", e.Name())
		}
	}
}

func TestVerifyBadInput(t *testing.T) {
	var out bytes.Buffer
	_, err := Verify(context.Background(), VerifyConfig{Conn: Conn{NATSURL: "nats://127.0.0.1:1"}}, &out)
	if !errors.Is(err, ErrUsage) {
		t.Errorf("verify without a projection: %v", err)
	}
	_, err = Verify(context.Background(), VerifyConfig{Conn: Conn{DataDir: t.TempDir()}}, &out)
	if err == nil || !strings.Contains(err.Error(), "live projection") {
		t.Errorf("verify without a live file: %v", err)
	}
}
