package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// freePorts returns n loopback ports free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l.Addr().(*net.TCPAddr).Port)
		defer l.Close()
	}
	return out
}

// natsCluster is three embedded nats-servers run as one JetStream cluster
// on loopback; a server stopped can be started again on its store dir.
type natsCluster struct {
	t       testing.TB
	cfgs    []natsembed.Config
	servers []*natsembed.Server // only the test goroutine touches it
	urls    []string
}

// startCluster starts three embedded nats-servers as one JetStream cluster
// on loopback and returns them and their client URLs.
func startCluster(t testing.TB) ([]*natsembed.Server, []string) {
	c := startNATSCluster(t)
	return c.servers, c.urls
}

// startNATSCluster starts the three servers; t.Cleanup stops them.
func startNATSCluster(t testing.TB) *natsCluster {
	t.Helper()
	c := newNATSCluster(t)
	c.start(0, 1, 2)
	return c
}

// newNATSCluster configures the three servers without starting any
// (start does); t.Cleanup stops those started.
func newNATSCluster(t testing.TB) *natsCluster {
	t.Helper()
	return newNATSClusterOf(t, 3)
}

// newNATSClusterOf is newNATSCluster with size servers (s1..s<size>).
func newNATSClusterOf(t testing.TB, size int) *natsCluster {
	t.Helper()
	ports := freePorts(t, 2*size) // client, route per server
	var routes []string
	for i := range size {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[size+i]))
	}
	c := &natsCluster{t: t, servers: make([]*natsembed.Server, size)}
	for i := range size {
		dir := t.TempDir()
		conf := filepath.Join(dir, "nats.conf")
		text := fmt.Sprintf("cluster { name: c1, listen: 127.0.0.1:%d, routes: [%s] }\n", ports[size+i], strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := natsembed.DefaultConfig()
		cfg.DataDir, cfg.ConfigFile = filepath.Join(dir, "js"), conf
		cfg.Listen = fmt.Sprintf("127.0.0.1:%d", ports[i])
		cfg.ServerName = fmt.Sprintf("s%d", i+1)
		c.cfgs = append(c.cfgs, cfg)
		c.urls = append(c.urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			if s != nil {
				s.Shutdown()
			}
		}
	})
	return c
}

// start starts servers which (together: a lone server of a cluster waits
// for its routes) on their store dirs.
func (c *natsCluster) start(which ...int) {
	c.t.Helper()
	errs := make(chan error, len(which))
	started := make([]*natsembed.Server, len(c.servers))
	for _, i := range which {
		go func() {
			s, err := natsembed.Start(c.cfgs[i])
			started[i] = s
			errs <- err
		}()
	}
	var failed error
	for range which {
		if err := <-errs; err != nil {
			failed = err
		}
	}
	for _, i := range which {
		if started[i] != nil {
			c.servers[i] = started[i]
		}
	}
	if failed != nil {
		c.t.Fatalf("cluster server: %v", failed)
	}
}

// stop shuts servers which down (their store dirs are kept).
func (c *natsCluster) stop(which ...int) {
	var wg sync.WaitGroup
	for _, i := range which {
		s := c.servers[i]
		c.servers[i] = nil
		wg.Go(s.Shutdown)
	}
	wg.Wait()
}

// TestR3ClusterLosesAServer: one node on a three-server JetStream cluster
// with --replicas 3 (log, snapshots, object store replicated). Killing the
// log stream's leader server loses no acknowledged append, and appends are
// served again within the bound; the time it took is logged.
func TestR3ClusterLosesAServer(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers")
	}
	servers, urls := startCluster(t)
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.NATSURL = strings.Join(urls, ",")
	cfg.HTTPAddr = ""
	cfg.Replicas = 3
	var n *node.Node
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The cluster elects its JetStream meta leader after the routes
		// connect: until then a replicated stream cannot be placed.
		var err error
		n, err = node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			break
		}
		if n != nil {
			_ = n.Shutdown(context.Background())
		}
		if time.Now().After(deadline) {
			t.Fatalf("node on the R3 cluster: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "r3", &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
		t.Fatal(err)
	}
	acked := 0
	appendOne := func() error {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := c.Append(rctx, "r3", &memoryv1.AppendRequest{CommandId: fmt.Sprintf("c%d", acked),
			Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("note %d", acked)}}})
		if err == nil {
			acked++
		}
		return err
	}
	for range 20 {
		if err := appendOne(); err != nil {
			t.Fatal(err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	info, err := js.Stream(ctx, "MEM")
	if err != nil {
		t.Fatal(err)
	}
	si, err := info.Info(ctx)
	if err != nil || si.Cluster == nil || len(si.Cluster.Replicas) != 2 {
		t.Fatalf("log stream not R3: %+v %v", si.Cluster, err)
	}
	leader := si.Cluster.Leader
	for i, s := range servers {
		if fmt.Sprintf("s%d", i+1) == leader {
			s.Shutdown()
		}
	}
	killed := time.Now()
	for appendOne() != nil {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("no append served within 30 s after the log's leader %s stopped", leader)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("log leader %s stopped: first append served again after %v", leader, time.Since(killed).Round(time.Millisecond))
	for range 10 {
		if err := appendOne(); err != nil {
			t.Fatalf("after failover: %v", err)
		}
	}
	cx, err := c.Context(ctx, "r3")
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, m := range cx.GetMessages() {
		if m.GetLayer() == "l1" && strings.HasPrefix(m.GetContent(), "note ") {
			got++
		}
	}
	// An append that failed (a timeout is "unknown") may have been stored;
	// every acknowledged one must be.
	if got < acked {
		t.Fatalf("%d acknowledged appends, %d in the session", acked, got)
	}
}
