package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// withoutSeq is a context reply without its stream sequence (a migration
// to partitions gives every message a new one).
func withoutSeq(c *memoryv1.ContextReply) *memoryv1.ContextReply {
	c = proto.Clone(c).(*memoryv1.ContextReply)
	c.Seq = 0
	return c
}

// TestMigrateLogPartitions: `replay migrate-log --partitions 6 --data-dir`
// moves a node's one-stream log to six streams and its projection aside; a
// node of one stream then refuses the data dir, a node started with
// --log-partitions 6 serves the same contexts (sequences aside), projects
// the log again, and takes writes; a second run has nothing to do.
func TestMigrateLogPartitions(t *testing.T) {
	f := nodeFixture(t)
	dir := copyFixture(t)
	ctx := context.Background()
	var out, progress bytes.Buffer
	if err := Run(ctx, []string{"migrate-log", "--data-dir", dir, "--partitions", "6"}, &out, &progress); err != nil {
		t.Fatalf("migrate-log --partitions 6: %v\n%s", err, out.String())
	}
	t.Logf("%s", strings.TrimSpace(out.String()))
	if !strings.Contains(out.String(), "migrated MEM to 6 partitions MEM_P0..MEM_P5") {
		t.Fatalf("summary: %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ProjectionFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the one stream's projection is still in place: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ProjectionBeforePartitions)); err != nil {
		t.Fatalf("the one stream's projection was not kept aside: %v", err)
	}
	out.Reset()
	if err := Run(ctx, []string{"migrate-log", "--data-dir", dir, "--partitions", "6"}, &out, &progress); err != nil || !strings.Contains(out.String(), "nothing to do") {
		t.Fatalf("second run: %v %q", err, out.String())
	}

	// The projection made from the partitions offline (else the node makes
	// it when it starts).
	out.Reset()
	if err := Run(ctx, []string{"rebuild", "--data-dir", dir}, &out, &progress); err != nil || !strings.Contains(out.String(), "from 6 partitions") {
		t.Fatalf("rebuild (the number of partitions read from the streams): %v %q", err, out.String())
	}

	// Compaction is per stream: the six partitions (and the projection
	// file, its checkpoints kept) are rewritten like any stream.
	out.Reset()
	if err := Run(ctx, []string{"compact", "--data-dir", dir, "--force"}, &out, &progress); err != nil || !strings.Contains(out.String(), "MEM_P5") {
		t.Fatalf("compact: %v\n%s", err, out.String())
	}
	st, err := projections.Open(filepath.Join(dir, ProjectionFile))
	if err != nil {
		t.Fatal(err)
	}
	var applied []uint64
	for i := range 6 {
		applied = append(applied, st.AppliedSeqOf(i))
	}
	parts := st.LogPartitions()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if parts != 6 || slices.Contains(applied, 0) {
		t.Fatalf("the compacted projection records %d partitions, checkpoints %v", parts, applied)
	}

	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr, cfg.LogWindow = dir, "127.0.0.1:-1", "", 0
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if n, err := node.Start(ctx, cfg, quiet); err == nil {
		_ = n.Shutdown(ctx)
		t.Fatal("a node of one stream started on the log in six partitions")
	} else if n != nil {
		_ = n.Shutdown(ctx)
	}
	cfg.LogPartitions = 6
	n, err := node.Start(ctx, cfg, quiet)
	if err != nil {
		t.Fatalf("node of six partitions on the migrated log: %v", err)
	}
	defer n.Shutdown(ctx)
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := client.New(nc)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.WaitProjected(wctx, ^uint64(0)); err != nil {
		t.Fatalf("the projection made again did not catch up: %v", err)
	}
	for _, id := range f.sessions {
		pts := f.points[id]
		got, err := c.Context(ctx, id)
		if err != nil {
			t.Fatalf("context %s: %v", id, err)
		}
		if want := pts[len(pts)-1].context; !proto.Equal(withoutSeq(got), withoutSeq(want)) {
			t.Fatalf("context %s differs after the migration:\n%s\nwant:\n%s", id, protojson.Format(withoutSeq(got)), protojson.Format(withoutSeq(want)))
		}
	}
	const marker = "after the migration to partitions"
	if _, err := c.AppendMessages(ctx, f.sessions[0], &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: marker}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Search(ctx, f.sessions[0], &memoryv1.SearchRequest{Query: "migration partitions", Scope: memoryv1.SearchScope_SEARCH_SCOPE_SESSION})
	if err != nil || len(rep.GetHits()) == 0 || rep.GetHits()[0].GetMessage().GetContent() != marker {
		t.Fatalf("search after the migration: %v, %v", rep, err)
	}
	// The projection made again holds what the old one did.
	rec, err := c.Recall(ctx, f.sessions[1], &memoryv1.RecallRequest{Limit: 50})
	if err != nil || rec.GetTotal() == 0 {
		t.Fatalf("recall of %s from the projection made again: %v, %v", f.sessions[1], rec, err)
	}
	old, err := projections.Open(filepath.Join(dir, ProjectionBeforePartitions))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, total, err := old.Recall(f.sessions[1], 0, 50); err != nil || total != rec.GetTotal() {
		t.Fatalf("recall of %s: %d messages before, %d after (%v)", f.sessions[1], total, rec.GetTotal(), err)
	}
}

// TestMigrateLogAllowDeletePartitions: a log whose one stream denies
// deletes (made by an old version) moved to six partitions keeps that
// configuration in every partition stream, so erasure cannot delete from
// them; `replay migrate-log` then migrates each partition stream to allow
// deletes and purges, every message kept (the export before and after
// equal) even after a crash in partition 0's copy, and a second run has
// nothing to do.
func TestMigrateLogAllowDeletePartitions(t *testing.T) {
	nodeFixture(t)
	dir := copyFixture(t)
	ctx := context.Background()
	var out, progress bytes.Buffer
	if err := Run(ctx, []string{"migrate-log", "--data-dir", dir, "--partitions", "6"}, &out, &progress); err != nil {
		t.Fatalf("migrate-log --partitions 6: %v\n%s", err, out.String())
	}
	denies := func() (n int) {
		withLink(t, dir, func(l *link) {
			for i := range 6 {
				s, err := l.js.Stream(ctx, events.PartitionStream(events.StreamName, i, 6))
				if err != nil {
					t.Fatal(err)
				}
				if c := s.CachedInfo().Config; c.DenyDelete || c.DenyPurge {
					n++
				}
			}
		})
		return n
	}
	if n := denies(); n != 6 {
		t.Fatalf("setup: %d of 6 partition streams deny deletes after moving a log that denies them", n)
	}
	var before bytes.Buffer
	if _, err := Export(ctx, ExportConfig{Conn: Conn{DataDir: dir}}, &before); err != nil {
		t.Fatal(err)
	}
	// A crash half way through copying partition 0's stream back: its
	// stream is missing or half filled; the next run reads K from
	// partition 1's and finishes.
	cutMigration(t, dir, events.PartitionStream(events.StreamName, 0, 6))
	out.Reset()
	if err := Run(ctx, []string{"migrate-log", "--data-dir", dir}, &out, &progress); err != nil {
		t.Fatalf("migrate-log of a log in six partitions: %v\n%s", err, out.String())
	}
	t.Logf("%s", strings.TrimSpace(out.String()))
	if !strings.Contains(out.String(), "resumed an interrupted migration") {
		t.Fatalf("the run after the crash did not resume partition 0's migration: %q", out.String())
	}
	if n := denies(); n != 0 {
		t.Fatalf("%d of 6 partition streams still deny deletes", n)
	}
	var after bytes.Buffer
	if _, err := Export(ctx, ExportConfig{Conn: Conn{DataDir: dir}}, &after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stripTimes(t, before.Bytes()), stripTimes(t, after.Bytes())) {
		t.Fatalf("the export differs after the migration (%d bytes before, %d after)", before.Len(), after.Len())
	}
	out.Reset()
	if err := Run(ctx, []string{"migrate-log", "--data-dir", dir}, &out, &progress); err != nil || strings.Count(out.String(), "nothing to do") != 6 {
		t.Fatalf("second run: %v %q", err, out.String())
	}
}

// stripTimes is an export without its lines' stream times (a copy's are
// its own).
func stripTimes(t *testing.T, export []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(export))
	sc.Buffer(nil, maxExportLine)
	for sc.Scan() {
		var l ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		l.Time = time.Time{}
		b, err := json.Marshal(&l)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes()
}
