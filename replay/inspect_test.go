package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// serve starts an embedded server on a (stopped) node data dir for the
// test and returns a Conn using it by URL.
func serve(t testing.TB, dataDir string) Conn {
	t.Helper()
	cfg := natsembed.DefaultConfig()
	cfg.DataDir = filepath.Join(dataDir, JetStreamDir)
	cfg.Listen = "127.0.0.1:-1"
	s, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return Conn{NATSURL: s.ClientURL()}
}

// inspectJSON runs Inspect with --json and decodes its two parts.
func inspectJSON(t *testing.T, cfg InspectConfig) (*memoryv1.ContextReply, *memoryv1.SessionSnapshot) {
	t.Helper()
	cfg.JSON = true
	var out bytes.Buffer
	if err := Inspect(context.Background(), cfg, &out); err != nil {
		t.Fatalf("inspect %s at seq %d: %v", cfg.SessionID, cfg.AtSeq, err)
	}
	var parts struct{ Context, Snapshot json.RawMessage }
	if err := json.Unmarshal(out.Bytes(), &parts); err != nil {
		t.Fatalf("inspect output: %v\n%s", err, out.String())
	}
	cx, snap := new(memoryv1.ContextReply), new(memoryv1.SessionSnapshot)
	if err := protojson.Unmarshal(parts.Context, cx); err != nil {
		t.Fatalf("context: %v", err)
	}
	if err := protojson.Unmarshal(parts.Snapshot, snap); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return cx, snap
}

// TestInspectTimeTravel: for every recorded point of random sessions, the
// context rebuilt from the log at that stream sequence equals the one the
// live node returned right after the command, and so does any sequence up
// to (excluding) the session's next batch.
func TestInspectTimeTravel(t *testing.T) {
	f := nodeFixture(t)
	conn := serve(t, f.dir)
	seed := time.Now().UnixNano()
	t.Logf("seed %d (points: %d batches over %d sessions)", seed, f.batches, len(f.sessions))
	rnd := rand.New(rand.NewPCG(uint64(seed), 1))
	compressed, recalled, memory, own := false, false, false, false
	checked := 0
	for range 40 {
		id := f.sessions[rnd.IntN(len(f.sessions))]
		pts := f.points[id]
		i := rnd.IntN(len(pts))
		at := pts[i].seq
		if i+1 < len(pts) && rnd.IntN(2) == 0 {
			at += uint64(rnd.Int64N(int64(pts[i+1].from - pts[i].seq))) // between two batches: same state
		}
		cx, snap := inspectJSON(t, InspectConfig{Conn: conn, SessionID: id, AtSeq: at})
		if !proto.Equal(cx, pts[i].context) {
			t.Fatalf("seed %d: session %s at seq %d (point %d, batch seq %d): context differs\nreplayed: %v\nlive:     %v",
				seed, id, at, i, pts[i].seq, cx, pts[i].context)
		}
		if snap.GetLastSeq() != pts[i].seq {
			t.Fatalf("snapshot last seq %d, want %d", snap.GetLastSeq(), pts[i].seq)
		}
		compressed = compressed || snap.GetCompressions() > 0
		recalled = recalled || cx.GetLayers().GetRecalled() > 0
		memory = memory || cx.GetLayers().GetMemory() > 0
		own = own || recallsOwn(cx)
		checked++
	}
	// The last point of every session, and the latest (no --at-seq), agree.
	for _, id := range f.sessions {
		pts := f.points[id]
		cx, _ := inspectJSON(t, InspectConfig{Conn: conn, SessionID: id})
		if !proto.Equal(cx, pts[len(pts)-1].context) {
			t.Fatalf("session %s latest: context differs", id)
		}
		compressed = compressed || cx.GetLayers().GetL2() > 0
		own = own || recallsOwn(cx)
	}
	if !compressed {
		t.Fatalf("fixture never compressed: the test does not cover L2/summaries")
	}
	if !recalled || !memory {
		t.Fatalf("no checked point had a recalled (%v) or memory (%v) section: the test does not cover the context assembler", recalled, memory)
	}
	if !own {
		t.Fatalf("no checked point recalled a turn of the session's own swap (recorded by reference): the test does not cover it")
	}
	t.Logf("%d random points equal", checked)
}

// recallsOwn reports whether cx's recalled section shows a turn of the
// session's own swap (its id names no other session and no summary).
func recallsOwn(cx *memoryv1.ContextReply) bool {
	for _, m := range cx.GetMessages() {
		if id, ok := strings.CutPrefix(m.GetId(), "recalled:"); ok && m.GetLayer() == "recalled" && !strings.Contains(id, "/") && !strings.HasPrefix(id, "summary:") {
			return strings.HasPrefix(m.GetContent(), "Recalled ")
		}
	}
	return false
}

// TestInspectAtTime: --at-time picks the last batch whose command time is
// not after T.
func TestInspectAtTime(t *testing.T) {
	f := nodeFixture(t)
	conn := serve(t, f.dir)
	id := f.sessions[0]
	pts := f.points[id]
	i := len(pts) / 2
	_, snap := inspectJSON(t, InspectConfig{Conn: conn, SessionID: id, AtSeq: pts[i].seq})
	at := time.Unix(0, snap.GetUpdatedUnixNano())
	cx, _ := inspectJSON(t, InspectConfig{Conn: conn, SessionID: id, AtTime: at})
	if !proto.Equal(cx, pts[i].context) {
		t.Fatalf("at time %s: context differs from the one at seq %d", at, pts[i].seq)
	}
	if _, err := sessionAtErr(conn, id, time.Unix(0, 1)); !errors.Is(err, ErrNoSession) {
		t.Fatalf("before creation: %v, want ErrNoSession", err)
	}
}

func sessionAtErr(conn Conn, id string, at time.Time) (string, error) {
	var out bytes.Buffer
	err := Inspect(context.Background(), InspectConfig{Conn: conn, SessionID: id, AtTime: at}, &out)
	return out.String(), err
}

// TestInspectText runs the whole command line on a data dir (embedded
// server started and stopped by the command) and checks the readable report.
func TestInspectText(t *testing.T) {
	f := nodeFixture(t)
	id := f.sessions[1]
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"inspect", "session", id, "--data-dir", f.dir}, &out, &errOut); err != nil {
		t.Fatalf("inspect: %v", err)
	}
	last := f.points[id][len(f.points[id])-1].context
	text := out.String()
	for _, want := range []string{"session " + id + " (latest)", "context sent to the LLM", "You are a careful analyst", "layers: rom"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, m := range last.GetMessages() {
		if !strings.Contains(text, m.GetContent()) {
			t.Fatalf("report lacks the content of %s", m.GetId())
		}
	}
	t.Logf("report: %d lines, first:\n%s", strings.Count(text, "\n"), strings.Join(strings.SplitN(text, "\n", 12)[:11], "\n"))
}

func TestInspectBadInput(t *testing.T) {
	f := nodeFixture(t)
	conn := serve(t, f.dir)
	ctx := context.Background()
	var out bytes.Buffer

	err := Inspect(ctx, InspectConfig{Conn: conn, SessionID: "nobody"}, &out)
	if !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("unknown session: %v", err)
	}
	err = Inspect(ctx, InspectConfig{Conn: conn, SessionID: "s0", AtSeq: 3, AtTime: time.Now()}, &out)
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("both --at-*: %v", err)
	}
	err = Run(ctx, []string{"inspect", "session", "s0", "--nats-url", conn.NATSURL, "--at-seq", "3", "--at-time", "2024-01-01T00:00:00Z"}, &out, &out)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "exclude") || ExitCode(err) != 2 {
		t.Fatalf("both flags: %v", err)
	}
	err = Run(ctx, []string{"inspect", "session", "s0", "--nats-url", conn.NATSURL, "--at-time", "yesterday"}, &out, &out)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "RFC3339") {
		t.Fatalf("bad time: %v", err)
	}
	err = Run(ctx, []string{"inspect", "session", "bad.id", "--nats-url", conn.NATSURL}, &out, &out)
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("bad id: %v", err)
	}
	err = Run(ctx, []string{"inspect", "sessions", "s0", "--nats-url", conn.NATSURL}, &out, &out)
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("bad positional: %v", err)
	}
	// Before the session's first batch.
	first := f.points["s3"][0].seq
	err = Inspect(ctx, InspectConfig{Conn: conn, SessionID: "s3", AtSeq: first - 1}, &out)
	if !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), "did not exist yet") {
		t.Fatalf("before creation: %v", err)
	}
	// A directory that is not a node's.
	err = Inspect(ctx, InspectConfig{Conn: Conn{DataDir: t.TempDir()}, SessionID: "s0"}, &out)
	if !errors.Is(err, ErrNoStream) {
		t.Fatalf("not a data dir: %v", err)
	}
}

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	ctx := context.Background()
	for _, args := range [][]string{nil, {"frobnicate"}, {"stats"}, {"export", "--bogus"}, {"stats", "--data-dir", "x", "extra"}} {
		err := Run(ctx, args, &out, &out)
		if !errors.Is(err, ErrUsage) || ExitCode(err) != 2 {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	err := Run(ctx, []string{"frobnicate"}, &out, &out)
	if !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %v", err)
	}
	if err := Run(ctx, []string{"help"}, &out, &out); err != nil || !strings.Contains(out.String(), "inspect session <id>") {
		t.Errorf("help: %v", err)
	}
}

// TestInspectOutsideWindow: once the log's head is removed, a point before
// its first kept sequence (or before its first message's time) is refused
// with ErrOutsideWindow, exit status 5, naming the earliest point; a point
// inside is not.
func TestInspectOutsideWindow(t *testing.T) {
	f := nodeFixture(t)
	dir := copyFixture(t)
	conn := serve(t, dir)
	l, err := conn.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	ctx := context.Background()
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		t.Fatal(err)
	}
	const first = 40
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(first)); err != nil {
		t.Fatal(err)
	}
	id := f.sessions[0]
	for _, cfg := range []InspectConfig{
		{Conn: conn, SessionID: id, AtSeq: first - 1},
		{Conn: conn, SessionID: id, AtTime: time.Unix(1, 0)},
	} {
		err := Inspect(ctx, cfg, io.Discard)
		if !errors.Is(err, ErrOutsideWindow) || ExitCode(err) != 5 || !strings.Contains(err.Error(), "earliest point to inspect") {
			t.Errorf("inspect at seq %d / %v on a log starting at %d: %v (exit %d), want ErrOutsideWindow naming the earliest point", cfg.AtSeq, cfg.AtTime, first, err, ExitCode(err))
		}
	}
	if err := Inspect(ctx, InspectConfig{Conn: conn, SessionID: id, AtSeq: first}, io.Discard); errors.Is(err, ErrOutsideWindow) {
		t.Errorf("inspect at the first kept sequence: %v", err)
	}
}
