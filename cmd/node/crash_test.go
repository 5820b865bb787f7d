package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

var crashLoad = flag.Duration("crash.load", 1500*time.Millisecond, "how long the crash test loads the node before kill -9")

// sessionLog is what one client goroutine knows about one of its sessions.
type sessionLog struct {
	id       string
	acked    uint64 // messages acknowledged
	version  uint64 // version after the last acknowledged append
	context  *memoryv1.ContextReply
	inflight *memoryv1.AppendRequest // sent, not acknowledged when the node died
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startNode(t *testing.T, bin, dataDir, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "--data-dir", dataDir, "--nats-listen", addr, "--http", "", "--snapshot-every", "7")
	logf, err := os.Create(filepath.Join(t.TempDir(), "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			t.Logf("node log:\n%s", out)
		}
	})
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		nc, err := nats.Connect("nats://"+addr, nats.Timeout(time.Second))
		if err == nil {
			_, err = nc.Request("$SRV.PING.memory", nil, time.Second)
			nc.Close()
			if err == nil {
				return cmd
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("node on %s did not become ready", addr)
	return nil
}

func buildNode(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentmem-node")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func message(i int) *memoryv1.MessageInput {
	role := memoryv1.Role_ROLE_USER
	if i%2 == 1 {
		role = memoryv1.Role_ROLE_ASSISTANT
	}
	return &memoryv1.MessageInput{Role: role, Content: fmt.Sprintf("message %d: the quarterly figure was %d and Alice approved it", i, i*37)}
}

// TestCrashNoAcknowledgedWriteLost runs the node as a separate process,
// appends across 50 sessions from 8 concurrent clients, kill -9s it mid-load,
// restarts it and checks every acknowledged append is there and each
// session's context is what it was at its last acknowledged append.
func TestCrashNoAcknowledgedWriteLost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the node binary")
	}
	bin := buildNode(t)
	dataDir := t.TempDir()
	addr := freePort(t)
	node := startNode(t, bin, dataDir, addr)

	const sessions, workers = 50, 8
	logs := make([]*sessionLog, sessions)
	setup, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(setup)
	ctx := context.Background()
	for i := range logs {
		logs[i] = &sessionLog{id: fmt.Sprintf("crash-%02d", i)}
		if _, err := c.CreateSession(ctx, logs[i].id, &memoryv1.CreateSessionRequest{
			UserId: "u", SystemPrompt: "You are a careful analyst.", MaxContextTokens: 1200, ReservedOutputTokens: 200,
		}); err != nil {
			t.Fatal(err)
		}
	}
	setup.Close()

	var stop atomic.Bool
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := nats.Connect("nats://"+addr, nats.MaxReconnects(0))
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			wc := client.New(nc).WithTimeout(2 * time.Second)
			for i := 0; !stop.Load(); i++ {
				s := logs[w+workers*(i%((sessions+workers-1-w)/workers))]
				req := &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{message(int(s.acked))}}
				s.inflight = req
				rep, err := wc.Append(ctx, s.id, req)
				if err != nil {
					return // the node died: req stays in flight
				}
				s.inflight = nil
				s.acked++
				s.version = rep.GetResult().GetVersion()
				acked.Add(1)
				// The context read waits for the sections of the user
				// message, stored after the append (one version more).
				if cx, err := wc.Context(ctx, s.id); err == nil && cx.GetVersion() >= s.version {
					s.context, s.version = cx, cx.GetVersion()
				} else {
					s.context = nil
				}
			}
		}()
	}
	time.Sleep(*crashLoad)
	if err := node.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = node.Wait()
	stop.Store(true)
	wg.Wait()
	t.Logf("acknowledged appends before kill -9: %d", acked.Load())
	if acked.Load() < 100 {
		t.Fatalf("only %d appends acknowledged before the kill: load too light to test anything", acked.Load())
	}

	startNode(t, bin, dataDir, addr)
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c = client.New(nc)
	compared, retried := 0, 0
	for _, s := range logs {
		info, err := c.Get(ctx, s.id)
		if err != nil {
			t.Fatalf("%s: %v", s.id, err)
		}
		if s.inflight == nil {
			// Killed between an append and its context read: the sections'
			// batch may have landed or not (one version more, or none).
			sectionsMayFollow := s.context == nil && s.acked > 0 && info.GetVersion() == s.version+1
			if info.GetTotalMessages() != s.acked || info.GetVersion() != s.version && s.acked > 0 && !sectionsMayFollow {
				t.Errorf("%s: %d messages at version %d after restart, acknowledged %d at version %d",
					s.id, info.GetTotalMessages(), info.GetVersion(), s.acked, s.version)
				continue
			}
			if s.context != nil {
				cx, err := c.Context(ctx, s.id)
				if err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(cx, s.context) {
					t.Errorf("%s: context after restart differs from the one at the last acknowledged append", s.id)
				}
				compared++
			}
			continue
		}
		// The in-flight append may or may not be stored: retrying it with
		// the same command id must apply it exactly once.
		if info.GetTotalMessages() != s.acked && info.GetTotalMessages() != s.acked+1 {
			t.Errorf("%s: %d messages after restart, acknowledged %d (+1 in flight)", s.id, info.GetTotalMessages(), s.acked)
			continue
		}
		rep, err := c.Append(ctx, s.id, s.inflight)
		if err != nil {
			t.Fatalf("%s: retry in-flight append: %v", s.id, err)
		}
		if stored := info.GetTotalMessages() == s.acked+1; rep.GetResult().GetDuplicate() != stored {
			t.Errorf("%s: retry duplicate=%v, but stored before the crash=%v", s.id, rep.GetResult().GetDuplicate(), stored)
		}
		after, err := c.Get(ctx, s.id)
		if err != nil {
			t.Fatal(err)
		}
		if after.GetTotalMessages() != s.acked+1 {
			t.Errorf("%s: %d messages after the retry, want %d", s.id, after.GetTotalMessages(), s.acked+1)
		}
		retried++
	}
	t.Logf("sessions: %d contexts compared byte for byte, %d in-flight appends retried", compared, retried)
	if compared < sessions/2 {
		t.Errorf("only %d of %d sessions had a recorded context to compare", compared, sessions)
	}
}
