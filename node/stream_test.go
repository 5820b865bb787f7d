package node_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The bounds of the stream-defense tests: how long a request may take to
// answer 503, the node to notice and log, and Shutdown to return.
const (
	answerBound   = 5 * time.Second
	noticeBound   = 5 * time.Second
	shutdownBound = 10 * time.Second
)

// logBuffer collects a node's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLog waits until the log holds every one of parts on one line.
func (l *logBuffer) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(noticeBound)
	for {
		for line := range strings.Lines(l.String()) {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q within %s:\n%s", parts, noticeBound, l.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// streamNode is a node on dataDir logging to logs, with a client and an
// "operator" connection that has every right (the embedded single-user
// server's anonymous user).
type streamNode struct {
	n    *node.Node
	c    *client.Client
	js   jetstream.JetStream // the operator's
	logs *logBuffer
	once sync.Once
}

func startStreamNode(t *testing.T, dataDir string, mutate func(*node.Config)) *streamNode {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dataDir, "127.0.0.1:-1", ""
	if mutate != nil {
		mutate(&cfg)
	}
	logs := &logBuffer{}
	n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("%v\nthe node's log:\n%s", err, logs.String())
	}
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s := &streamNode{n: n, c: client.New(nc), js: js, logs: logs}
	t.Cleanup(func() {
		nc.Close()
		s.shutdown(t)
	})
	return s
}

// shutdown stops the node (once) and fails the test if that takes longer
// than shutdownBound.
func (s *streamNode) shutdown(t *testing.T) {
	t.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
		defer cancel()
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- s.n.Shutdown(ctx) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			t.Logf("Shutdown returned in %s", time.Since(start).Round(time.Millisecond))
		case <-time.After(shutdownBound + time.Second):
			t.Errorf("Shutdown did not return within %s", shutdownBound)
		}
	})
}

// gauge is the value of the unlabelled gauge name on the node's registry.
func (s *streamNode) gauge(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := s.n.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func (s *streamNode) waitGauge(t *testing.T, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(noticeBound)
	for s.gauge(t, name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v after %s, want %v", name, s.gauge(t, name), noticeBound, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wantCode runs call and checks it fails with the service error code
// within answerBound.
func wantCode(t *testing.T, what string, code int, call func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*answerBound)
	defer cancel()
	start := time.Now()
	err := call(ctx)
	took := time.Since(start)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("%s: %v (after %s), want a %d", what, err, took, code)
	}
	if took > answerBound {
		t.Fatalf("%s: %d after %s, want within %s", what, code, took, answerBound)
	}
	t.Logf("%s: %d in %s: %s", what, code, took.Round(time.Millisecond), ce.Message)
}

func userInput(text string) *memoryv1.MessageInput {
	return &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: text}
}

// TestStreamDeletedUnderNode deletes the log stream under a running node (an
// operator with every right): appends, entry puts, context reads and
// min_seq queries answer 503 within the bound, the node logs an error naming
// the stream, agentmem_log_healthy drops to 0, nothing recreates the
// stream, and Shutdown returns. A restart on the same data dir refuses to
// recreate an empty log under the projection.
func TestStreamDeletedUnderNode(t *testing.T) {
	dir := t.TempDir()
	s := startStreamNode(t, dir, nil)
	ctx := context.Background()
	if _, err := s.c.CreateSession(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.AppendMessages(ctx, "s1", userInput("hello")); err != nil {
		t.Fatal(err)
	}
	put, err := s.c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.n.WaitProjected(wctx, put.GetResult().GetSeq()); err != nil {
		t.Fatal(err)
	}
	s.waitGauge(t, "agentmem_log_healthy", 1)

	if err := s.js.DeleteStream(ctx, events.StreamName); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "append to a live session", 503, func(ctx context.Context) error {
		_, err := s.c.AppendMessages(ctx, "s1", userInput("after the delete"))
		return err
	})
	wantCode(t, "append again", 503, func(ctx context.Context) error {
		_, err := s.c.AppendMessages(ctx, "s1", userInput("after the delete"))
		return err
	})
	wantCode(t, "create a session", 503, func(ctx context.Context) error {
		_, err := s.c.CreateSession(ctx, "s2", nil)
		return err
	})
	wantCode(t, "put an entry", 503, func(ctx context.Context) error {
		_, err := s.c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v2")})
		return err
	})
	wantCode(t, "context", 503, func(ctx context.Context) error {
		_, err := s.c.Context(ctx, "s1")
		return err
	})
	wantCode(t, "recall with a min_seq past the projection", 503, func(ctx context.Context) error {
		_, err := s.c.Recall(ctx, "s1", &memoryv1.RecallRequest{MinSeq: put.GetResult().GetSeq() + 1})
		return err
	})
	s.logs.waitLog(t, "level=ERROR", `msg="log stream unhealthy"`, "stream=MEM", "does not exist")
	s.logs.waitLog(t, "level=ERROR", `msg="projector stopped"`, "stream=MEM", "projection at seq")
	s.waitGauge(t, "agentmem_log_healthy", 0)
	if _, err := s.js.Stream(ctx, events.StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream after the requests: %v, want not found (nothing recreates it)", err)
	}
	s.shutdown(t)

	// A restart refuses: the projection holds events the log no longer has.
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	n, err := node.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		_ = n.Shutdown(ctx)
		t.Fatal("a node started on a data dir whose log was deleted")
	}
	if !errors.Is(err, projections.ErrLogBehind) || !strings.Contains(err.Error(), "stream MEM does not exist") {
		t.Fatalf("Start = %v, want ErrLogBehind", err)
	}
	if _, err := openStore(t, dir).Stream(ctx, events.StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream after the refused start: %v, want not found (not recreated)", err)
	}
}

// openStore runs a bare embedded server on dataDir's store and returns a
// JetStream on it (an operator's tool on a stopped node).
func openStore(t *testing.T, dataDir string) jetstream.JetStream {
	t.Helper()
	ecfg := natsembed.DefaultConfig()
	ecfg.DataDir = filepath.Join(dataDir, "jetstream")
	ecfg.Listen = "127.0.0.1:-1"
	srv, err := natsembed.Start(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		srv.Shutdown()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		srv.Shutdown()
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestNodeRefusesShorterLog: a stream deleted and recreated empty while the
// node was stopped (or replaced by an older copy) ends before the
// projection's checkpoint: the node refuses to start on it.
func TestNodeRefusesShorterLog(t *testing.T) {
	dir := t.TempDir()
	s := startStreamNode(t, dir, nil)
	ctx := context.Background()
	if _, err := s.c.CreateSession(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	rep, err := s.c.AppendMessages(ctx, "s1", userInput("hello"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.n.WaitProjected(wctx, rep.GetResult().GetSeq()); err != nil {
		t.Fatal(err)
	}
	s.shutdown(t)

	func() {
		js := openStore(t, dir)
		st, err := js.Stream(ctx, events.StreamName)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		if err := js.DeleteStream(ctx, events.StreamName); err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}()
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	n, err := node.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		_ = n.Shutdown(ctx)
		t.Fatal("a node started on a log shorter than its projection")
	}
	if !errors.Is(err, projections.ErrLogBehind) || !strings.Contains(err.Error(), "stream MEM ends at 0") {
		t.Fatalf("Start = %v, want ErrLogBehind naming the stream's end", err)
	}
}

// TestSubjectPurgedUnderNode purges one session's subject under a running
// node whose stream allows purges (a stream the server refused to update):
// the session's next appends answer 503, never 409, the node logs the lost
// sequence and the lost messages, and other sessions keep working.
func TestSubjectPurgedUnderNode(t *testing.T) {
	s := startStreamNode(t, t.TempDir(), func(c *node.Config) { c.DenyPurge = false })
	ctx := context.Background()
	for _, id := range []string{"s1", "s2"} {
		if _, err := s.c.CreateSession(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.c.AppendMessages(ctx, id, userInput("hello "+id)); err != nil {
			t.Fatal(err)
		}
	}
	s.waitGauge(t, "agentmem_log_healthy", 1)
	st, err := s.js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(events.SessionSubject("s1"))); err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"append to the purged session", "append again"} {
		wantCode(t, what, 503, func(ctx context.Context) error {
			_, err := s.c.AppendMessages(ctx, "s1", userInput("after the purge"))
			return err
		})
	}
	s.logs.waitLog(t, "level=ERROR", "no longer holds", "subject=mem.ev.session.s1")
	s.logs.waitLog(t, "level=ERROR", `msg="log stream unhealthy"`, "stream=MEM", "lost 2 messages")
	s.waitGauge(t, "agentmem_log_healthy", 0)
	if _, err := s.c.AppendMessages(ctx, "s2", userInput("still here")); err != nil {
		t.Fatalf("append to another session: %v", err)
	}
}

// TestStreamSettings: with --log-allow-delete=false the node's log stream
// denies single-message deletes and purges, even to a connection with
// every right.
func TestStreamSettings(t *testing.T) {
	s := startStreamNode(t, t.TempDir(), func(c *node.Config) { c.LogAllowDelete = false })
	ctx := context.Background()
	if _, err := s.c.CreateSession(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	st, err := s.js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; !cfg.DenyDelete || !cfg.DenyPurge {
		t.Fatalf("stream deny_delete=%v deny_purge=%v, want both", cfg.DenyDelete, cfg.DenyPurge)
	}
	if err := st.Purge(ctx); err == nil {
		t.Fatal("the log stream was purged")
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(events.SessionSubject("s1"))); err == nil {
		t.Fatal("a session's subject was purged")
	}
	if _, err := s.c.AppendMessages(ctx, "s1", userInput("still writable")); err != nil {
		t.Fatal(err)
	}
}

// TestNodeStartsOnOldStream: a data dir whose stream an earlier build made
// without deny_purge starts on a node with --log-allow-delete=false; the
// stream gains deny_purge and keeps its sessions.
func TestNodeStartsOnOldStream(t *testing.T) {
	dir := t.TempDir()
	old := startStreamNode(t, dir, func(c *node.Config) { c.DenyPurge, c.LogAllowDelete = false, false })
	ctx := context.Background()
	if _, err := old.c.CreateSession(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := old.c.AppendMessages(ctx, "s1", userInput("from the old build")); err != nil {
		t.Fatal(err)
	}
	st, err := old.js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if st.CachedInfo().Config.DenyPurge {
		t.Fatal("the old-style stream already denies purges")
	}
	old.shutdown(t)

	s := startStreamNode(t, dir, func(c *node.Config) { c.LogAllowDelete = false })
	st, err = s.js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; !cfg.DenyPurge || !cfg.DenyDelete {
		t.Fatalf("after the restart: deny_delete=%v deny_purge=%v, want both", cfg.DenyDelete, cfg.DenyPurge)
	}
	rep, err := s.c.AppendMessages(ctx, "s1", userInput("from the new build"))
	if err != nil {
		t.Fatal(err)
	}
	if v := rep.GetResult().GetVersion(); v != 3 {
		t.Fatalf("append after the restart at version %d, want 3", v)
	}
}

// TestMigratedLogAllowDeleteFlag: --log-allow-delete creates the stream
// without deny_delete and deny_purge; a restart with the default flags
// keeps it so (a stream that allows deletes, made by the flag or by
// `replay migrate-log`, is never made to deny them again) and serves it.
func TestMigratedLogAllowDeleteFlag(t *testing.T) {
	dir := t.TempDir()
	s := startStreamNode(t, dir, func(c *node.Config) { c.LogAllowDelete = true })
	ctx := context.Background()
	if _, err := s.c.CreateSession(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	st, err := s.js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; cfg.DenyDelete || cfg.DenyPurge {
		t.Fatalf("--log-allow-delete: deny_delete=%v deny_purge=%v", cfg.DenyDelete, cfg.DenyPurge)
	}
	s.shutdown(t)

	s = startStreamNode(t, dir, nil)
	st, err = s.js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; cfg.DenyDelete || cfg.DenyPurge {
		t.Fatalf("restart with default flags: deny_delete=%v deny_purge=%v", cfg.DenyDelete, cfg.DenyPurge)
	}
	rep, err := s.c.AppendMessages(ctx, "s1", userInput("after the restart"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, rep.GetResult().GetSeq()); err != nil {
		t.Fatalf("delete a message: %v", err)
	}
}
