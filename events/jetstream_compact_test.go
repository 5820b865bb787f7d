package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/natsembed"
)

// compactServer is an embedded server on dir that a test stops (to read
// its files at rest) and starts again.
type compactServer struct {
	dir string
	s   *natsembed.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

func startCompactServer(t testing.TB, dir string) *compactServer {
	t.Helper()
	cfg := natsembed.DefaultConfig()
	cfg.DataDir, cfg.Listen = dir, "127.0.0.1:-1"
	s, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c := &compactServer{dir: dir, s: s, nc: nc, js: js}
	t.Cleanup(c.stop)
	return c
}

func (c *compactServer) stop() {
	if c.s != nil {
		c.nc.Close()
		c.s.Shutdown()
		c.s = nil
	}
}

// waitStreamDirsRemoved waits until the server has removed the directories
// of the streams deleted (a deleted stream's directory is renamed with a
// "." prefix and removed in the background, after the delete answered),
// failing after 10 s: only then do the files at rest say what the store
// holds.
func waitStreamDirsRemoved(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", ".*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleted streams' directories still there after 10 s: %v", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// FilesContaining returns the files under dir whose bytes contain marker
// (the whole file, read at rest).
func filesContaining(t *testing.T, dir string, marker string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(marker)) {
			rel, _ := filepath.Rel(dir, p)
			hits = append(hits, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// Markers of the content a compaction must remove (gone*) or keep (kept*).
const (
	goneMsgPurged  = "GONE-purged-subject-7f3a"
	goneMsgDeleted = "GONE-deleted-message-2b9c"
	goneMsgLast    = "GONE-last-message-51d0"
	goneKVOld      = "GONE-kv-replaced-9e1f"
	goneKVDeleted  = "GONE-kv-deleted-44a2"
	goneObject     = "GONE-object-deleted-c871"
	keptMsg1       = "KEPT-message-0d6e"
	keptKV         = "KEPT-kv-current-a5b3"
	keptObject     = "KEPT-object-3f90"
)

func objectName(marker string) string {
	return fmt.Sprintf("obj-%x", marker[:4]) + marker[len(marker)-4:]
}

var goneMarkers = []string{goneMsgPurged, goneMsgDeleted, goneMsgLast, goneKVOld, goneKVDeleted, goneObject}

// heldMsg is one held message as read back.
type heldMsg struct {
	seq     uint64
	subject string
	data    string
	time    time.Time
	msgID   string
}

// writeErasable fills a log that allows deletes, a snapshot-like KV bucket
// and an object store, then removes content the ways erasure does: a
// purged subject, a deleted message, the log's last message, a replaced
// and a deleted key, a deleted object. It returns the log's held messages.
func writeErasable(t *testing.T, js jetstream.JetStream) []heldMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	cfg.AllowDelete = true
	l, err := NewJetStreamLog(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]uint64{}
	var deleteSeq uint64
	for i := range 30 {
		subj := SessionSubject([]string{"keep", "gone", "mixed"}[i%3])
		data := fmt.Sprintf("%s batch %d", keptMsg1, i)
		switch {
		case strings.HasSuffix(subj, ".gone"):
			data = fmt.Sprintf("%s batch %d", goneMsgPurged, i)
		case i == 14:
			data = goneMsgDeleted
		}
		res, err := l.Append(ctx, subj, last[subj], fmt.Sprintf("c%d", i), []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		last[subj] = res.Seq
		if i == 14 {
			deleteSeq = res.Seq
		}
	}
	res, err := l.Append(ctx, SessionSubject("tail"), 0, "tail", []byte(goneMsgLast))
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(SessionSubject("gone"))); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{deleteSeq, res.Seq} {
		if err := s.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}

	kv, err := NewKVSnapshotStore(ctx, js, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{"session.a", goneKVOld}, {"session.a", keptKV}, {"session.b", goneKVDeleted}} {
		if err := kv.Put(ctx, p[0], []byte(p[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.kv.Purge(ctx, "session.b"); err != nil {
		t.Fatal(err)
	}
	obj, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "DATA", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	// Object names are ids (largedata), not content.
	for _, o := range []string{goneObject, keptObject} {
		if _, err := obj.PutBytes(ctx, objectName(o), bytes.Repeat([]byte(o), 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := obj.Delete(ctx, objectName(goneObject)); err != nil {
		t.Fatal(err)
	}
	return readHeld(t, js, StreamName)
}

func readHeld(t *testing.T, js jetstream.JetStream, stream string) []heldMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []heldMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, heldMsg{seq: m.Sequence, subject: m.Subject, data: string(m.Data), time: m.Time, msgID: m.Header.Get(jetstream.MsgIDHeader)})
	}
	return out
}

func compactAll(t *testing.T, ctx context.Context, js jetstream.JetStream, cfg CompactConfig) []CompactReport {
	t.Helper()
	names, err := CompactCandidates(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	var reps []CompactReport
	for _, n := range names {
		rep, err := CompactStream(ctx, js, n, cfg)
		if err != nil {
			return append(reps, rep)
		}
		reps = append(reps, rep)
	}
	return reps
}

// checkCompacted checks the files at rest hold no removed marker and the
// kept ones, and the log, bucket and object store read as before.
func checkCompacted(t *testing.T, srv *compactServer, want []heldMsg, wantBounds jetstream.StreamState) *compactServer {
	t.Helper()
	srv.stop()
	waitStreamDirsRemoved(t, srv.dir)
	for _, m := range goneMarkers {
		if hits := filesContaining(t, srv.dir, m); len(hits) > 0 {
			t.Errorf("after compaction %q is still in %v", m, hits)
		}
	}
	for _, m := range []string{keptMsg1, keptKV, keptObject} {
		if hits := filesContaining(t, srv.dir, m); len(hits) == 0 {
			t.Errorf("after compaction %q is in no file", m)
		}
	}
	srv = startCompactServer(t, srv.dir)
	js := srv.js
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got := readHeld(t, js, StreamName); !slices.EqualFunc(got, want, func(a, b heldMsg) bool {
		return a == b || a.time.Equal(b.time) && a.seq == b.seq && a.subject == b.subject && a.data == b.data && a.msgID == b.msgID
	}) {
		t.Errorf("held messages after compaction:\n%v\nwant\n%v", got, want)
	}
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	st := s.CachedInfo().State
	if st.FirstSeq != wantBounds.FirstSeq || st.LastSeq != wantBounds.LastSeq || st.Msgs != wantBounds.Msgs {
		t.Errorf("bounds after compaction first %d last %d msgs %d, want %d %d %d", st.FirstSeq, st.LastSeq, st.Msgs, wantBounds.FirstSeq, wantBounds.LastSeq, wantBounds.Msgs)
	}
	if c := s.CachedInfo().Config; c.DenyDelete || c.Metadata[CompactingMetadataKey] != "" || c.Metadata[CompactedMetadataKey] == "" {
		t.Errorf("config after compaction: deny_delete %v, metadata %v", c.DenyDelete, c.Metadata)
	}
	// A node start accepts it, and appends go on after the old last sequence.
	l, err := NewJetStreamLog(ctx, js, DefaultJetStreamConfig())
	if err != nil {
		t.Fatalf("NewJetStreamLog after compaction: %v", err)
	}
	var keepLast uint64
	for _, m := range want {
		if m.subject == SessionSubject("keep") {
			keepLast = m.seq
		}
	}
	res, err := l.Append(ctx, SessionSubject("keep"), keepLast, "after", []byte("x"))
	if err != nil || res.Seq != wantBounds.LastSeq+1 {
		t.Errorf("append after compaction: %+v %v, want seq %d", res, err, wantBounds.LastSeq+1)
	}
	kv, err := NewKVSnapshotStore(ctx, js, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := kv.Get(ctx, "session.a"); err != nil || !ok || string(v) != keptKV {
		t.Errorf("snapshot after compaction: %q %v %v", v, ok, err)
	}
	if _, ok, err := kv.Get(ctx, "session.b"); err != nil || ok {
		t.Errorf("purged snapshot after compaction: %v %v", ok, err)
	}
	obj, err := js.ObjectStore(ctx, "DATA")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := obj.GetBytes(ctx, objectName(keptObject)); err != nil || !bytes.Equal(b, bytes.Repeat([]byte(keptObject), 1000)) {
		t.Errorf("kept object after compaction: %d bytes, %v", len(b), err)
	}
	if _, err := obj.GetBytes(ctx, objectName(goneObject)); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Errorf("deleted object after compaction: %v", err)
	}
	for _, n := range []string{CompactTempPrefix + StreamName, CompactTempPrefix + "KV_" + SnapshotBucket, CompactTempPrefix + "OBJ_DATA"} {
		if _, err := js.Stream(ctx, n); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("copy %s after compaction: %v", n, err)
		}
	}
	return srv
}

func streamState(t *testing.T, js jetstream.JetStream, name string) jetstream.StreamState {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State
}

// TestCompactStreamRemovesBytes: content removed from the log (purged
// subject, deleted messages, the last one included), a KV bucket
// (replaced and purged keys) and an object store (deleted object) is still
// in the files before CompactStream and in none after; the held messages
// keep their sequences, times and headers, the bounds do not move.
func TestCompactStreamRemovesBytes(t *testing.T) {
	srv := startCompactServer(t, t.TempDir())
	want := writeErasable(t, srv.js)
	bounds := streamState(t, srv.js, StreamName)
	if bounds.LastSeq != 31 || bounds.Msgs != uint64(len(want)) || len(want) != 19 {
		t.Fatalf("fixture: %+v, %d held", bounds, len(want))
	}
	srv.stop()
	for _, m := range goneMarkers { // the test can fail: the bytes are there
		if hits := filesContaining(t, srv.dir, m); len(hits) == 0 {
			t.Fatalf("before compaction %q is in no file: the fixture proves nothing", m)
		}
	}
	srv = startCompactServer(t, srv.dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reps := compactAll(t, ctx, srv.js, CompactConfig{IdleTimeout: 5 * time.Second})
	if len(reps) != 3 {
		t.Fatalf("compacted %+v, want the log, the bucket and the object store", reps)
	}
	for _, r := range reps {
		if r.Skipped != "" || r.Digest == "" || r.Steps[len(r.Steps)-1] != StepCompactDeleteCopy {
			t.Errorf("report %+v", r)
		}
	}
	// Run again: nothing removed since, so every stream is skipped.
	for _, r := range compactAll(t, ctx, srv.js, CompactConfig{}) {
		if r.Skipped == "" {
			t.Errorf("second run compacted %s again: %+v", r.Stream, r)
		}
	}
	checkCompacted(t, srv, want, bounds)
}

// TestCompactStreamResume: a compaction cut at every step (the context
// ends, as at a crash) leaves the log refused by a node where it is not
// whole, and a second run finishes with the same result as an uncut one.
func TestCompactStreamResume(t *testing.T) {
	steps := []CompactStep{StepCompactCopy, StepCompactVerify, StepCompactDelete, StepCompactCopyBack, StepCompactVerifyBack, StepCompactRestore, StepCompactDeleteCopy}
	for _, cut := range steps {
		t.Run(string(cut), func(t *testing.T) {
			srv := startCompactServer(t, t.TempDir())
			want := writeErasable(t, srv.js)
			bounds := streamState(t, srv.js, StreamName)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cctx, crash := context.WithCancel(ctx)
			_, err := CompactStream(cctx, srv.js, StreamName, CompactConfig{IdleTimeout: 5 * time.Second, Progress: func(s CompactStep, done, total uint64) {
				if s == cut && done >= total/2 {
					crash()
				}
			}})
			crash()
			if err == nil {
				t.Fatalf("cut at %s: no error", cut)
			}
			nerr := CheckNotMigrating(ctx, srv.js, StreamName)
			if aerr := CheckNoCompaction(ctx, srv.js); !errors.Is(aerr, ErrCompacting) && errors.Is(nerr, ErrCompacting) {
				t.Errorf("CheckNoCompaction %v while CheckNotMigrating %v", aerr, nerr)
			}
			if s, serr := srv.js.Stream(ctx, StreamName); serr != nil || s.CachedInfo().Config.Metadata[CompactingMetadataKey] != "" {
				if !errors.Is(nerr, ErrCompacting) {
					t.Errorf("stream not whole after a cut at %s (%v), CheckNotMigrating %v", cut, serr, nerr)
				}
			}
			rep, err := CompactStream(ctx, srv.js, StreamName, CompactConfig{IdleTimeout: 5 * time.Second})
			if err != nil {
				t.Fatalf("rerun after a cut at %s: %v", cut, err)
			}
			if rep.Resumed == "" {
				t.Errorf("rerun after a cut at %s says nothing was resumed: %+v", cut, rep)
			}
			compactAll(t, ctx, srv.js, CompactConfig{IdleTimeout: 5 * time.Second})
			checkCompacted(t, srv, want, bounds)
		})
	}
}

// TestCompactStreamStaleCopy: a run cut after its copy was verified, then
// the stream written (a node ran), then run again: the stale copy is
// dropped and the compaction starts over, keeping the new message.
func TestCompactStreamStaleCopy(t *testing.T) {
	srv := startCompactServer(t, t.TempDir())
	writeErasable(t, srv.js)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cctx, crash := context.WithCancel(ctx)
	_, err := CompactStream(cctx, srv.js, StreamName, CompactConfig{Progress: func(s CompactStep, _, _ uint64) {
		if s == StepCompactDelete {
			crash()
		}
	}})
	crash()
	if err == nil {
		t.Fatal("cut: no error")
	}
	l, err := NewJetStreamLog(ctx, srv.js, DefaultJetStreamConfig())
	if err != nil {
		t.Fatalf("the stream is whole before its deletion, a node may start: %v", err)
	}
	res, err := l.Append(ctx, SessionSubject("late"), 0, "late", []byte("late write"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := CompactStream(ctx, srv.js, StreamName, CompactConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Resumed, "stale") {
		t.Errorf("report %+v does not say the copy was stale", rep)
	}
	s, err := srv.js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.GetMsg(ctx, res.Seq); err != nil || string(m.Data) != "late write" {
		t.Fatalf("the late write after compaction: %v", err)
	}
}

// TestSecureDeleteRemovesBytesAtOnce records what JetStream does without
// a compaction: a secure delete (no_erase false) overwrites the message in
// its block file at once; a plain delete and a subject purge leave the
// bytes (the reason CompactStream exists).
func TestSecureDeleteRemovesBytesAtOnce(t *testing.T) {
	srv := startCompactServer(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := DefaultJetStreamConfig()
	cfg.AllowDelete = true
	if _, err := NewJetStreamLog(ctx, srv.js, cfg); err != nil {
		t.Fatal(err)
	}
	s, err := srv.js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	const secure, plain, purged = "SECURE-deleted-1c2d", "PLAIN-deleted-3e4f", "PURGED-subject-5a6b"
	var seqs []uint64
	for _, p := range [][2]string{{"a", secure}, {"b", plain}, {"c", purged}, {"d", "kept"}} {
		ack, err := srv.js.Publish(ctx, SessionSubject(p[0]), []byte(p[1]))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	if err := s.SecureDeleteMsg(ctx, seqs[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, seqs[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(SessionSubject("c"))); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	if hits := filesContaining(t, srv.dir, secure); len(hits) > 0 {
		t.Errorf("securely deleted message still in %v", hits)
	}
	for _, m := range []string{plain, purged} {
		if hits := filesContaining(t, srv.dir, m); len(hits) == 0 {
			t.Errorf("%s: no longer in any file without a compaction (JetStream changed: revisit CompactStream's doc)", m)
		}
	}
}

// BenchmarkCompactStream: a log of compactBenchMsgs 1 KiB messages over
// 200 aggregates, half of them purged (erased), rewritten by CompactStream
// (Force: every iteration rewrites it). Reports the held messages per
// second, the time of each step and the stream directory's size before
// the first and after the last run. File storage, default sync.
func BenchmarkCompactStream(b *testing.B) {
	const compactBenchMsgs = 20000
	srv := startCompactServer(b, b.TempDir())
	defer srv.stop()
	ctx := context.Background()
	cfg := DefaultJetStreamConfig()
	cfg.AllowDelete = true
	if _, err := NewJetStreamLog(ctx, srv.js, cfg); err != nil {
		b.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 1024)
	var futs []jetstream.PubAckFuture
	for i := range compactBenchMsgs {
		f, err := srv.js.PublishAsync(SessionSubject(fmt.Sprintf("s%d", i%200)), payload)
		if err != nil {
			b.Fatal(err)
		}
		futs = append(futs, f)
	}
	select {
	case <-srv.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publish timed out")
	}
	_ = futs
	s, err := srv.js.Stream(ctx, StreamName)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(SessionSubject(fmt.Sprintf("s%d", 2*i)))); err != nil {
			b.Fatal(err)
		}
	}
	streamDir := func() int64 {
		dirs, _ := filepath.Glob(filepath.Join(srv.dir, "jetstream", "*", "streams", StreamName))
		var n int64
		for _, d := range dirs {
			_ = filepath.WalkDir(d, func(_ string, e fs.DirEntry, err error) error {
				if err == nil && e.Type().IsRegular() {
					if fi, err := e.Info(); err == nil {
						n += fi.Size()
					}
				}
				return nil
			})
		}
		return n
	}
	before := streamDir()
	steps := map[CompactStep]time.Duration{}
	var held uint64
	var took time.Duration
	for b.Loop() {
		var cur CompactStep
		mark := time.Now()
		began := mark
		rep, err := CompactStream(ctx, srv.js, StreamName, CompactConfig{Force: true, Progress: func(st CompactStep, _, _ uint64) {
			if st != cur {
				now := time.Now()
				if cur != "" {
					steps[cur] += now.Sub(mark)
				}
				cur, mark = st, now
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		steps[cur] += time.Since(mark)
		took += time.Since(began)
		held += rep.Messages
	}
	b.ReportMetric(float64(held)/took.Seconds(), "held-msgs/s")
	for st, d := range steps {
		b.ReportMetric(float64(d.Milliseconds())/float64(b.N), strings.ReplaceAll(string(st), " ", "-")+"-ms")
	}
	b.ReportMetric(float64(before), "dir-bytes-before")
	b.ReportMetric(float64(streamDir()), "dir-bytes-after")
}

// TestCompactStreamRefusesDurables: a stream with a durable consumer is
// not compacted (deleting the stream would delete the consumer); nothing
// is changed.
func TestCompactStreamRefusesDurables(t *testing.T) {
	srv := startCompactServer(t, t.TempDir())
	writeErasable(t, srv.js)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := srv.js.CreateConsumer(ctx, StreamName, jetstream.ConsumerConfig{Durable: "auditor"}); err != nil {
		t.Fatal(err)
	}
	_, err := CompactStream(ctx, srv.js, StreamName, CompactConfig{})
	if !errors.Is(err, ErrCompactState) || !strings.Contains(err.Error(), "auditor") {
		t.Fatalf("compact with a durable consumer: %v", err)
	}
	if _, err := srv.js.Stream(ctx, CompactTempPrefix+StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("a copy was made: %v", err)
	}
}
