package node_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/placement"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes (a node's log).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// handoverLoad appends from several sessions through clients on every
// server, recording each answer. Each session has its own user: with one
// user for all twelve, each user message's context recalled up to 400 of
// the other sessions' short notes, a 15 KB sections batch per message,
// and on the -race three-server loopback cluster of two cores JetStream
// then took over 5 s to acknowledge some appends, so a node's drain
// passed its 15 s bound (about one run in five) waiting for the others'
// answers to requests it forwarded. That is the rig's capacity, not the
// hand-over this measures; BenchmarkCapacity measures the log's.
type handoverLoad struct {
	mu       sync.Mutex
	acked    int
	contents []string // acknowledged contents
	stopping []string // answers that refused because a node was stopping
	others   []string // a few other failed answers (retried)
	failed   map[int]int
	slowest  time.Duration // slowest acknowledged append (its retries included)
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func startHandoverLoad(t *testing.T, clients []*client.Client, sessions int) *handoverLoad {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &handoverLoad{failed: map[int]int{}, cancel: cancel}
	for i := range sessions {
		sid := fmt.Sprintf("h%d", i)
		if _, err := clients[i%len(clients)].CreateSession(ctx, sid, &memoryv1.CreateSessionRequest{UserId: fmt.Sprintf("load-u%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range sessions {
		l.wg.Go(func() {
			sid := fmt.Sprintf("h%d", i)
			for k := 0; ctx.Err() == nil; k++ {
				content := fmt.Sprintf("%s note %d", sid, k)
				req := &memoryv1.AppendRequest{CommandId: fmt.Sprintf("%s-%d", sid, k),
					Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_USER, Content: content}}}
				began := time.Now()
				for try := 0; ctx.Err() == nil; try++ {
					c := clients[(i+k+try)%len(clients)].WithTimeout(8 * time.Second)
					_, err := c.Append(context.Background(), sid, req)
					l.mu.Lock()
					if err == nil {
						l.acked++
						l.contents = append(l.contents, content)
						l.slowest = max(l.slowest, time.Since(began))
					} else {
						l.failed[client.Code(err)]++
						if strings.Contains(err.Error(), "stopping") {
							l.stopping = append(l.stopping, err.Error())
						} else if len(l.others) < 5 {
							l.others = append(l.others, err.Error())
						}
					}
					l.mu.Unlock()
					if err == nil {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	return l
}

func (l *handoverLoad) stop() { l.cancel(); l.wg.Wait() }

// takeSlowest returns the slowest acknowledged append since the last call.
func (l *handoverLoad) takeSlowest() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.slowest
	l.slowest = 0
	return s
}

// TestRollingHandover: three nodes on a three-server cluster (R3) under
// load; each node in turn stops gracefully (SIGTERM: hand over, drain) and
// starts again on its data dir. A stopping node forwards what still
// reaches it until the new owner serves (issue 18, finding 10: it answered
// "503 the node is stopping"), every lease is deleted on hand-over (finding
// 9: "deleting the lease failed; it ages out"), and no acknowledged append
// waits for a lease to age out (clusterLease; the slowest is logged).
func TestRollingHandover(t *testing.T) {
	for _, k := range faultPartitions() {
		t.Run(fmt.Sprintf("K%d", k), func(t *testing.T) { rollingHandover(t, k) })
	}
}

// rollingHandover is TestRollingHandover with the log in k streams; it
// also checks that every acknowledged append is in the log once.
func rollingHandover(t *testing.T, k int) {
	cl := startNATSCluster(t)
	logs := make([]*lockedBuffer, 3)
	cfgs := make([]node.Config, 3)
	nodes := make([]*node.Node, 3)
	start := func(i int) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := node.Start(context.Background(), cfgs[i], slog.New(slog.NewTextHandler(logs[i], nil)))
			if err == nil {
				nodes[i] = n
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: %v", i, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	for i := range 3 {
		logs[i] = &lockedBuffer{}
		cfg := node.DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.NodeID = fmt.Sprintf("n%d", i)
		order := append([]string{cl.urls[i]}, append(append([]string{}, cl.urls[:i]...), cl.urls[i+1:]...)...)
		cfg.NATSURL = strings.Join(order, ",")
		cfg.HTTPAddr = ""
		cfg.Replicas = 3
		cfg.Placement.LeaseTTL = clusterLease
		cfg.Placement.Tick = 100 * time.Millisecond
		cfg.LogPartitions = k
		cfg.ProjectionPartitions = splitFor(k)
		cfgs[i] = cfg
		start(i)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			_ = n.Shutdown(ctx)
			cancel()
		}
	})
	clients, js := clusterClients(t, cl)
	waitSettled(t, nodes...)
	l := startHandoverLoad(t, clients, 12)
	time.Sleep(time.Second)
	var slowest []time.Duration
	for i := range 3 {
		l.takeSlowest()
		// Half the node's default drain (--drain-timeout 30s). Two of five
		// clean-clone CI runs (-race, the packages' tests running beside)
		// once saw node 2's drain run out here, and with 30 s it took up
		// to 26.6 s (3 of 84 stops, stressed): requests it had forwarded
		// to the node stopped before it were lost as that node
		// unsubscribed, and waited out their 30 s forward timeout (the
		// client's append timed out at 8 s and was retried). A stopping
		// node now unsubscribes once the forwards stop coming
		// (TestLeavingNodeServesLateForwards): 1.5 s at most in 35
		// stressed runs.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		began := time.Now()
		if err := nodes[i].Shutdown(ctx); err != nil {
			t.Errorf("node %d shutdown after %s: %v", i, time.Since(began).Round(time.Millisecond), err)
			if f, ferr := os.CreateTemp("", "rolling-goroutines-*.txt"); ferr == nil {
				_ = pprof.Lookup("goroutine").WriteTo(f, 2)
				t.Logf("goroutines at the failed shutdown: %s", f.Name())
				_ = f.Close()
			}
			logProblems(t, logs)
		}
		cancel()
		stopped := time.Since(began)
		time.Sleep(time.Second)
		start(i)
		waitSettled(t, nodes...)
		time.Sleep(500 * time.Millisecond)
		s := l.takeSlowest()
		slowest = append(slowest, s)
		t.Logf("node %d: stopped in %s, slowest acknowledged append around its hand-over %s", i, stopped.Round(time.Millisecond), s.Round(time.Millisecond))
	}
	l.stop()
	checkAckedContents(t, l.contents, js)
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("%d appends acknowledged; failed answers (retried) by code %v, e.g. %q", l.acked, l.failed, l.others)
	if len(l.others) > 0 || t.Failed() {
		logProblems(t, logs)
	}
	if len(l.stopping) > 0 {
		t.Errorf("%d answers refused because a node was stopping, e.g. %s", len(l.stopping), l.stopping[0])
	}
	for i, b := range logs {
		if n := strings.Count(b.String(), "deleting the lease failed"); n > 0 {
			t.Errorf("node %d: %d leases not deleted on hand-over (aged out instead)", i, n)
		}
	}
	// A lease that ages out shows as a wait of a whole lease (and as a
	// "deleting the lease failed" line, checked above); the race detector
	// slows a drain by itself to 1–3 s on a shared machine, and with the
	// log in six partitions a hand-over's slowest append took 5.5–6.0 s
	// under -race there.
	bound := clusterLease
	if raceDetector {
		bound = 3 * clusterLease
	}
	for i, s := range slowest {
		if s >= bound {
			t.Errorf("hand-over of node %d: an acknowledged append waited %s (bound %s, the lease %s)", i, s.Round(time.Millisecond), bound, clusterLease)
		}
	}
}

// logProblems logs the nodes' warnings and errors (the last 40 of each).
func logProblems(t *testing.T, logs []*lockedBuffer) {
	for i, b := range logs {
		var lines []string
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				lines = append(lines, line)
			}
		}
		for _, line := range lines[max(0, len(lines)-40):] {
			t.Logf("n%d: %.300s", i, line)
		}
	}
}

// TestKillFailover: three nodes on a three-server cluster (R3) with the
// default lease, under load, with the log in one stream and in six
// (K6: the six streams' leaders spread over the servers). First no lease
// is lost while every node is healthy (a false failover: a lease that
// lapses on a live node); then one node dies (kill -9: its connections
// close, nothing is handed over) and one of its sessions is served again by
// the others within a loose bound: an append, and a session search and a
// context finding what was written before the kill (issue 18, finding 12:
// ~4.9 s with the 5 s lease; the target is 2 s, measured by
// BenchmarkFailover). The node then starts again on its data dir and
// serves its sessions again; every acknowledged append of the load is in
// the log once. The figures are logged.
func TestKillFailover(t *testing.T) {
	for _, k := range faultPartitions() {
		t.Run(fmt.Sprintf("K%d", k), func(t *testing.T) { killFailover(t, k) })
	}
}

func killFailover(t *testing.T, k int) {
	const failoverBound = 3 * time.Second // the 2 s target, loosely: a loaded machine
	cl := startNATSCluster(t)
	var nodes []*node.Node
	dirs := make([]string, 3)
	nodeCfg := func(i int) func(*node.Config) {
		return func(c *node.Config) {
			if dirs[i] == "" {
				dirs[i] = c.DataDir
			}
			c.DataDir = dirs[i]
			c.Placement = node.DefaultConfig().Placement
			c.LogPartitions = k
			c.ProjectionPartitions = splitFor(k)
			order := append([]string{cl.urls[i]}, append(append([]string{}, cl.urls[:i]...), cl.urls[i+1:]...)...)
			c.NATSURL = strings.Join(order, ",")
		}
	}
	for i := range 3 {
		nodes = append(nodes, startR3Node(t, cl.urls[i:i+1], fmt.Sprintf("n%d", i), nodeCfg(i)))
	}
	clients, js := clusterClients(t, cl)
	if k > 1 {
		t.Logf("stream leaders by server: %v", waitLeadersSpread(t, js, k))
	}
	waitSettled(t, nodes...)
	l := startHandoverLoad(t, clients, 12)
	time.Sleep(15 * time.Second)
	lost := 0.0
	for _, n := range nodes {
		lost += counter(t, n, "agentmem_placement_lost_total", "")
	}
	t.Logf("healthy cluster under load for 15 s: %.0f leases lost, slowest acknowledged append %s", lost, l.takeSlowest().Round(time.Millisecond))
	if lost > 0 {
		t.Errorf("%.0f leases lapsed on live nodes (false failovers)", lost)
	}

	victim := nodes[0]
	// A session in every placement partition, written before the kill;
	// those the victim serves.
	parts := node.DefaultConfig().Placement.Partitions
	probes := make([]string, parts)
	for i, left := 0, parts; left > 0; i++ {
		if id := fmt.Sprintf("r%d", i); probes[placement.Partition(id, parts)] == "" {
			probes[placement.Partition(id, parts)] = id
			left--
		}
	}
	c := clients[1]
	ctx := context.Background()
	var served []string
	for _, id := range probes {
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, userInput(id+": the kestrel nests on the water tower")); err != nil {
			t.Fatal(err)
		}
		if victim.Serves(id) {
			served = append(served, id)
		}
	}
	if len(served) < 2 {
		t.Fatalf("the victim serves %d of the %d probe sessions", len(served), parts)
	}
	sid := served[0]
	l.takeSlowest()
	killed := time.Now()
	victim.Kill()
	for {
		_, err := c.WithTimeout(30*time.Second).AppendMessages(ctx, sid, userInput("after the kill"))
		if err == nil {
			break
		}
		if time.Since(killed) > time.Minute {
			t.Fatalf("%s not served a minute after the kill: %v", sid, err)
		}
	}
	took := time.Since(killed)
	// Reads of the victim's other sessions (not written since the kill).
	readsFor := func(c *client.Client, id string) error {
		rep, err := c.Search(ctx, id, &memoryv1.SearchRequest{Query: "kestrel", Scope: memoryv1.SearchScope_SEARCH_SCOPE_SESSION})
		if err != nil {
			return err
		}
		if len(rep.GetHits()) != 1 {
			return fmt.Errorf("session search of %s: %d hits, want 1", id, len(rep.GetHits()))
		}
		cx, err := c.Context(ctx, id)
		if err != nil {
			return err
		}
		if !strings.Contains(fmt.Sprint(cx.GetMessages()), "kestrel") {
			return fmt.Errorf("context of %s without its message", id)
		}
		return nil
	}
	// Each of the victim's other sessions polled at once; readTook is
	// when the last was served again.
	var readTook time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range served[1:] {
		wg.Go(func() {
			for {
				err := readsFor(c.WithTimeout(30*time.Second), id)
				if err == nil {
					break
				}
				if time.Since(killed) > time.Minute {
					t.Errorf("%s: reads not served a minute after the kill: %v", id, err)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			readTook = max(readTook, time.Since(killed))
			mu.Unlock()
		})
	}
	wg.Wait()
	time.Sleep(time.Second)
	t.Logf("K=%d kill -9: first acknowledged append on a moved session after %s, its sessions' search and context after %s; slowest acknowledged append of the load %s",
		k, took.Round(time.Millisecond), readTook.Round(time.Millisecond), l.takeSlowest().Round(time.Millisecond))
	if took > failoverBound {
		t.Errorf("a session of the killed node was served again after %s, want within %s", took.Round(time.Millisecond), failoverBound)
	}
	// How soon the killed node's sessions are searched and read again is
	// a figure (logged above; 3 s is the aim): on a shared 2-core machine
	// under -race it swings from 2 to 5 s. That they are served at all,
	// within a minute, is checked above.

	// The node starts again on its data dir and takes sessions back.
	again := startR3Node(t, cl.urls[0:1], "n0", nodeCfg(0))
	waitSettled(t, again, nodes[1], nodes[2])
	back := 0
	for _, id := range probes {
		if !again.Serves(id) {
			continue
		}
		back++
		if err := readsFor(clients[0].WithTimeout(10*time.Second), id); err != nil {
			t.Errorf("restarted node, its session %s: %v", id, err)
		}
		if _, err := clients[2].AppendMessages(ctx, id, userInput(id+" after the restart")); err != nil {
			t.Errorf("restarted node, append to its session %s: %v", id, err)
		}
	}
	t.Logf("restarted node serves %d of the %d probe sessions", back, parts)
	if back == 0 {
		t.Error("the restarted node serves no session")
	}
	l.stop()
	checkAckedContents(t, l.contents, js)
}

// clusterClients are a client on each server of cl, and JetStream on the
// first.
func clusterClients(t *testing.T, cl *natsCluster) ([]*client.Client, jetstream.JetStream) {
	t.Helper()
	var clients []*client.Client
	var js jetstream.JetStream
	for i, u := range cl.urls {
		nc, err := nats.Connect(u, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		clients = append(clients, client.New(nc))
		if i == 0 {
			if js, err = jetstream.New(nc); err != nil {
				t.Fatal(err)
			}
		}
	}
	return clients, js
}
