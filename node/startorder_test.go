package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// startOrderConfig is a node of the three-server cluster c (R3) with its
// own /healthz listener on a free loopback port.
func startOrderConfig(t *testing.T, c *natsCluster, id string) node.Config {
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.NodeID = id
	cfg.NATSURL = strings.Join(c.urls, ",")
	cfg.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	cfg.Replicas = 3
	cfg.Placement.LeaseTTL = clusterLease
	cfg.Placement.Tick = 100 * time.Millisecond
	return cfg
}

// started is what node.Start returned in a goroutine.
type started struct {
	n   *node.Node
	err error
}

// startAsync starts a node in a goroutine; the node (if any) is shut down
// by t.Cleanup, before the servers (registered earlier) stop.
func startAsync(t *testing.T, ctx context.Context, cfg node.Config) <-chan started {
	out := make(chan started, 1)
	go func() {
		n, err := node.Start(ctx, cfg, testLogger())
		out <- started{n, err}
	}()
	return out
}

// awaitStarted waits for a node's Start to return and fails the test on an error.
func awaitStarted(t *testing.T, ch <-chan started, within time.Duration) *node.Node {
	t.Helper()
	select {
	case s := <-ch:
		if s.err != nil {
			t.Fatalf("node start: %v", s.err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = s.n.Shutdown(ctx)
		})
		return s.n
	case <-time.After(within):
		t.Fatalf("node start still running after %s", within)
		return nil
	}
}

// healthzAt fetches /healthz at addr: the status code and body (0 while
// nothing listens there).
func healthzAt(addr string) (int, map[string]any) {
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// waitStarting waits until /healthz at addr answers 503 "starting" and
// returns what it says it waits for.
func waitStarting(t *testing.T, addr string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, body := healthzAt(addr)
		if code == http.StatusServiceUnavailable && body["status"] == "starting" {
			waiting, _ := body["waiting"].(string)
			if waiting == "" {
				t.Fatalf("/healthz 503 starting without what it waits for: %v", body)
			}
			return waiting
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz at %s = %d %v after %s, want 503 starting", addr, code, body, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStartInAnyOrder: three nodes started before the servers of a fresh
// three-server cluster (so first with nothing to connect to, then with no
// JetStream leader, then with too few peers for R3) all come up: each
// waits and retries until the cluster can take its streams and buckets,
// then serves (/healthz 200, an append through the cluster answered).
func TestStartInAnyOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers")
	}
	c := newNATSCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var chans []<-chan started
	var addrs []string
	for i := range 3 {
		cfg := startOrderConfig(t, c, fmt.Sprintf("n%d", i+1))
		addrs = append(addrs, cfg.HTTPAddr)
		chans = append(chans, startAsync(t, ctx, cfg))
	}
	// Every node says what it waits for before any server is up.
	for _, a := range addrs {
		waitStarting(t, a, 10*time.Second)
	}
	c.start(0, 1, 2)
	var nodes []*node.Node
	for _, ch := range chans {
		nodes = append(nodes, awaitStarted(t, ch, 90*time.Second))
	}
	for _, n := range nodes {
		waitHealthz(t, n, http.StatusOK, 30*time.Second)
	}
	nc, err := nats.Connect(strings.Join(c.urls, ","), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl := client.New(nc)
	for i := range 3 {
		sid := fmt.Sprintf("order-%d", i)
		rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
		if _, err := cl.CreateSession(rctx, sid, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			rcancel()
			t.Fatalf("create %s: %v", sid, err)
		}
		if _, err := cl.Append(rctx, sid, &memoryv1.AppendRequest{CommandId: "c1",
			Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_USER, Content: "hello"}}}); err != nil {
			rcancel()
			t.Fatalf("append %s: %v", sid, err)
		}
		rcancel()
	}
}

// TestHealthzStartingUntilLeader: a node on one server of a three-server
// cluster whose other servers are down (so no JetStream leader can be
// elected) keeps starting: /healthz answers 503 {"status":"starting",
// "waiting":...}; once the other servers are up it comes up and /healthz
// answers 200.
func TestHealthzStartingUntilLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers")
	}
	c := newNATSCluster(t)
	c.start(0)
	cfg := startOrderConfig(t, c, "n1")
	cfg.NATSURL = c.urls[0]
	ch := startAsync(t, context.Background(), cfg)
	waiting := waitStarting(t, cfg.HTTPAddr, 20*time.Second)
	t.Logf("waiting: %s", waiting)
	// Still waiting a while later: it does not give up.
	time.Sleep(2 * time.Second)
	select {
	case s := <-ch:
		t.Fatalf("start returned while the cluster has no leader: %v", s.err)
	default:
	}
	waitStarting(t, cfg.HTTPAddr, time.Second)
	c.start(1, 2)
	n := awaitStarted(t, ch, 90*time.Second)
	waitHealthz(t, n, http.StatusOK, 30*time.Second)
}

// TestStopWhileWaitingForCluster: a node waiting for its cluster stops at
// once when its context ends (as on SIGTERM): Run returns nil, and the
// data dir and HTTP port are free again.
func TestStopWhileWaitingForCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers")
	}
	c := newNATSCluster(t)
	c.start(0)
	cfg := startOrderConfig(t, c, "n1")
	cfg.NATSURL = c.urls[0]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx, cfg, testLogger(), 5*time.Second) }()
	waitStarting(t, cfg.HTTPAddr, 20*time.Second)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run stopped while waiting: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run still waiting 5s after its context ended")
	}
	if code, _ := healthzAt(cfg.HTTPAddr); code != 0 {
		t.Fatalf("/healthz still answers %d after run returned", code)
	}
	// The dir lock is released: a node on the same dir gets past it (and
	// waits for the cluster again, until its own context ends).
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	if _, err := node.Start(ctx2, cfg, testLogger()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second start on the same dir: %v, want the wait cut by its deadline", err)
	}
}

// TestStartFailsFastOnAuth: a refused user is not retried: Start fails
// within seconds and says the server refused the node's credentials.
func TestStartFailsFastOnAuth(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte("authorization { user: agentmem, password: right }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	scfg := natsembed.DefaultConfig()
	scfg.DataDir, scfg.ConfigFile, scfg.Listen = filepath.Join(dir, "js"), conf, "127.0.0.1:-1"
	s, err := natsembed.Start(scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.NATSURL = s.ClientURL()
	cfg.NATSUser, cfg.NATSPassword = "agentmem", "wrong"
	cfg.HTTPAddr = ""
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	n, err := node.Start(ctx, cfg, testLogger())
	if n != nil {
		_ = n.Shutdown(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "--nats-user") {
		t.Fatalf("start with a wrong password: %v, want the refusal named", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("start with a wrong password failed after %s, want at once", took)
	}
}
