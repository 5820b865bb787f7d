package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
)

// loggedLines is the log as (seq, subject, batch) lines, times left out
// (a copy's stream times are its own).
func loggedLines(t *testing.T, conn Conn) []string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Export(context.Background(), ExportConfig{Conn: conn}, &buf); err != nil {
		t.Fatalf("export: %v", err)
	}
	var out []string
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, maxExportLine)
	for sc.Scan() {
		var l ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		l.Time = time.Time{}
		b, _ := json.Marshal(l)
		out = append(out, string(b))
	}
	return out
}

// checkMigratedDir: verify passes on the migrated dir, the log is the same
// (sequences, subjects, batches), and a node started on it (default flags)
// serves the same contexts, keeps deletes allowed, appends after the last
// sequence, and a message can be deleted.
func checkMigratedDir(t *testing.T, f *fixture, dir string, before []string) {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer
	if err := Run(ctx, []string{"verify", "--data-dir", dir}, &out, &out); err != nil {
		t.Fatalf("verify after the migration: %v\n%s", err, out.String())
	}
	if after := loggedLines(t, Conn{DataDir: dir}); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the log changed: %d lines before, %d after", len(before), len(after))
	}

	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	n, err := node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("node on the migrated log: %v", err)
	}
	defer n.Shutdown(ctx)
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := client.New(nc)
	for _, id := range f.sessions {
		pts := f.points[id]
		got, err := c.Context(ctx, id)
		if err != nil {
			t.Fatalf("context %s: %v", id, err)
		}
		if want := pts[len(pts)-1].context; !proto.Equal(got, want) {
			t.Fatalf("context %s differs after the migration", id)
		}
	}
	rep, err := c.AppendMessages(ctx, f.sessions[0], &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "after the migration"})
	if err != nil {
		t.Fatal(err)
	}
	if seq := rep.GetResult().GetSeq(); seq != f.lastSeq+1 {
		t.Fatalf("first append after the migration at seq %d, want %d", seq, f.lastSeq+1)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.DenyDelete || c.DenyPurge {
		t.Fatalf("after a node start: deny_delete=%v deny_purge=%v", c.DenyDelete, c.DenyPurge)
	}
	if err := st.DeleteMsg(ctx, 1); err != nil {
		t.Fatalf("delete a message of the migrated log: %v", err)
	}
}

// TestMigrateLog: `replay migrate-log --data-dir` on a node's log keeps
// every sequence and batch; verify passes against the node's projection;
// the node restarts on it serving the same contexts; a message can be
// deleted; a second run has nothing to do.
func TestMigrateLog(t *testing.T) {
	f := nodeFixture(t)
	dir := copyFixture(t)
	before := loggedLines(t, Conn{DataDir: dir})
	if uint64(len(before)) != f.lastSeq {
		t.Fatalf("fixture log of %d messages, last seq %d", len(before), f.lastSeq)
	}
	var out, progress bytes.Buffer
	if err := Run(context.Background(), []string{"migrate-log", "--data-dir", dir}, &out, &progress); err != nil {
		t.Fatalf("migrate-log: %v\n%s", err, out.String())
	}
	t.Logf("%s", strings.TrimSpace(out.String()))
	if !strings.Contains(out.String(), "migrated MEM: ") || !strings.Contains(out.String(), "deny_delete and deny_purge off") {
		t.Fatalf("summary: %q", out.String())
	}
	out.Reset()
	if err := Run(context.Background(), []string{"migrate-log", "--data-dir", dir}, &out, &progress); err != nil || !strings.Contains(out.String(), "nothing to do") {
		t.Fatalf("second run: %v %q", err, out.String())
	}
	checkMigratedDir(t, f, dir, before)
}

// TestMigrateLogResume: a migration cut after the old stream was deleted,
// half way through the copy back (a crash): a node refuses to start on the
// half-filled log; `replay migrate-log` run again says it resumed and
// finishes; then everything is as after an uninterrupted run.
func TestMigrateLogResume(t *testing.T) {
	f := nodeFixture(t)
	dir := copyFixture(t)
	before := loggedLines(t, Conn{DataDir: dir})
	cutMigration(t, dir, events.StreamName)

	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	if n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); !errors.Is(err, events.ErrMigrating) {
		if n != nil {
			_ = n.Shutdown(context.Background())
		}
		t.Fatalf("node on a half-migrated log: %v, want events.ErrMigrating", err)
	}

	var out bytes.Buffer
	if err := Run(context.Background(), []string{"migrate-log", "--data-dir", dir}, &out, io.Discard); err != nil {
		t.Fatalf("migrate-log after the crash: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "resumed an interrupted migration") {
		t.Fatalf("summary: %q", out.String())
	}
	checkMigratedDir(t, f, dir, before)
}

// cutMigration runs the allow-delete migration of stream on the stopped
// node's dir and stops it (a crash) half way through its copy back.
func cutMigration(t *testing.T, dir, stream string) {
	t.Helper()
	withLink(t, dir, func(l *link) {
		ctx, crash := context.WithCancel(context.Background())
		defer crash()
		_, err := events.MigrateAllowDelete(ctx, l.js, events.MigrateConfig{Stream: stream, Progress: func(s events.MigrateStep, done, total uint64) {
			if s == events.StepCopyBack && done == total/2 {
				crash()
			}
		}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cut migration of %s: %v", stream, err)
		}
	})
}

// withLink calls fn with a link to an embedded server on the stopped
// node's dir.
func withLink(t *testing.T, dir string, fn func(l *link)) {
	t.Helper()
	conn := serveStopped(t, dir)
	defer conn.stop()
	l, err := conn.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	fn(l)
}

// stoppedServer is an embedded server on a stopped node's dir, by URL.
type stoppedServer struct {
	Conn
	stop func()
}

func serveStopped(t *testing.T, dir string) stoppedServer {
	t.Helper()
	l, err := Conn{DataDir: dir}.dial()
	if err != nil {
		t.Fatal(err)
	}
	return stoppedServer{Conn: Conn{NATSURL: l.embedded.ClientURL()}, stop: l.close}
}
