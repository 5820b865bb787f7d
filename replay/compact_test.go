package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/projections"
)

// Markers of content deleted the ways erasure deletes it.
var compactMarkers = []string{
	"ERASED-log-purged-subject-6c1e",
	"ERASED-snapshot-replaced-0f7d",
	"ERASED-snapshot-deleted-93b2",
	"ERASED-large-data-deleted-5a48",
	"ERASED-projection-key-d2c9",
}

// eraseInto writes the markers into a stopped node's data dir and deletes
// them: a log subject purged (its last message: the log's end is a gap),
// a snapshot replaced and one deleted, an object deleted, a projection
// bucket deleted.
func eraseInto(t *testing.T, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	func() {
		l, err := Conn{DataDir: dir}.dial()
		if err != nil {
			t.Fatal(err)
		}
		defer l.close()
		js := l.js
		if _, err := js.Publish(ctx, events.SessionSubject("erased"), []byte(compactMarkers[0])); err != nil {
			t.Fatal(err)
		}
		s, err := js.Stream(ctx, events.StreamName)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(events.SessionSubject("erased"))); err != nil {
			t.Fatal(err)
		}
		kv, err := js.KeyValue(ctx, events.SnapshotBucket)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][2]string{{"session.erased", compactMarkers[1]}, {"session.erased", "replacement"}, {"session.erased2", compactMarkers[2]}} {
			if _, err := kv.Put(ctx, p[0], []byte(p[1])); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []string{"session.erased", "session.erased2"} {
			if err := kv.Purge(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		obj, err := js.ObjectStore(ctx, "MEM_DATA")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obj.PutBytes(ctx, "erased-blob", bytes.Repeat([]byte(compactMarkers[3]), 2000)); err != nil {
			t.Fatal(err)
		}
		if err := obj.Delete(ctx, "erased-blob"); err != nil {
			t.Fatal(err)
		}
	}()
	db, err := bolt.Open(filepath.Join(dir, ProjectionFile), 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("zz-erase-test")
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucket)
		if err != nil {
			return err
		}
		for i := range 50 {
			if err := b.Put(fmt.Appendf(nil, "k%03d", i), bytes.Repeat([]byte(compactMarkers[4]), 40)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucket) }); err != nil {
		t.Fatal(err)
	}
}

// markersIn returns, per marker, the files under dir holding it.
func markersIn(t *testing.T, dir string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range compactMarkers {
			if bytes.Contains(b, []byte(m)) {
				rel, _ := filepath.Rel(dir, p)
				found[m] = append(found[m], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// exported is the log as `replay export` writes it, and the projection's dump.
func exported(t *testing.T, dir string) (string, string) {
	t.Helper()
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"export", "--data-dir", dir}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	st, err := projections.Open(filepath.Join(dir, ProjectionFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var dump bytes.Buffer
	if err := st.Dump(&dump); err != nil {
		t.Fatal(err)
	}
	return out.String(), dump.String()
}

// checkCompactedDir: no marker in any file, the log and the projection
// read as before, and a node starts on the directory.
func checkCompactedDir(t *testing.T, dir, wantLog, wantProj string) {
	t.Helper()
	if found := markersIn(t, dir); len(found) > 0 {
		t.Errorf("after compact, deleted content is still in the files: %v", found)
	}
	gotLog, gotProj := exported(t, dir)
	if gotLog != wantLog {
		t.Errorf("the log exports differently after compact (%d bytes, want %d)", len(gotLog), len(wantLog))
	}
	if gotProj != wantProj {
		t.Errorf("the projection dumps differently after compact")
	}
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("node on the compacted dir: %v", err)
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCompactRemovesDeletedBytes: after deletions of every kind the
// markers are in the files; `replay compact --data-dir` leaves none, the
// log and the projection read the same, a node starts; a second run skips
// every stream.
func TestCompactRemovesDeletedBytes(t *testing.T) {
	dir := copyFixture(t)
	eraseInto(t, dir)
	found := markersIn(t, dir)
	for _, m := range compactMarkers { // the check can fail
		if len(found[m]) == 0 {
			t.Fatalf("before compact %q is in no file: the test would prove nothing (%v)", m, found)
		}
	}
	wantLog, wantProj := exported(t, dir)

	var out bytes.Buffer
	if err := Run(context.Background(), []string{"compact", "--data-dir", dir}, &out, io.Discard); err != nil {
		t.Fatalf("compact: %v\n%s", err, out.String())
	}
	for _, want := range []string{"MEM ", "KV_MEM_SNAPSHOTS", "OBJ_MEM_DATA", ProjectionFile, "data dir:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("compact summary:\n%s", out.String())
	checkCompactedDir(t, dir, wantLog, wantProj)

	out.Reset()
	if err := Run(context.Background(), []string{"compact", "--data-dir", dir}, &out, io.Discard); err != nil {
		t.Fatalf("second compact: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "skipped") {
		t.Errorf("second compact did not skip:\n%s", out.String())
	}
}

// TestCompactHalfDoneRefusedByNode: with the log deleted and only its
// verified copy left, a node refuses to start (it would create an empty
// log), naming the compaction.
func TestCompactHalfDoneRefusedByNode(t *testing.T) {
	dir := copyFixture(t)
	func() {
		l, err := Conn{DataDir: dir}.dial()
		if err != nil {
			t.Fatal(err)
		}
		defer l.close()
		ctx, cut := context.WithCancel(context.Background())
		defer cut()
		_, err = events.CompactStream(ctx, l.js, events.StreamName, events.CompactConfig{Force: true, Progress: func(s events.CompactStep, _, _ uint64) {
			if s == events.StepCompactCopyBack {
				cut()
			}
		}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cut compaction: %v", err)
		}
	}()
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !errors.Is(err, events.ErrCompacting) {
		if n != nil {
			_ = n.Shutdown(context.Background())
		}
		t.Fatalf("node on a half-compacted log: %v, want events.ErrCompacting", err)
	}
}
