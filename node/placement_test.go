package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/placement"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

const clusterLease = 3 * time.Second

// startClusterNodes starts one agentmem node per server of a three-server
// JetStream cluster (R3), node i connected to server i first.
func startClusterNodes(t *testing.T, urls []string) []*node.Node {
	t.Helper()
	nodes := make([]*node.Node, len(urls))
	for i := range urls {
		cfg := node.DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.NodeID = fmt.Sprintf("n%d", i)
		order := append([]string{urls[i]}, append(append([]string{}, urls[:i]...), urls[i+1:]...)...)
		cfg.NATSURL = strings.Join(order, ",")
		cfg.HTTPAddr = ""
		cfg.Replicas = 3
		cfg.Placement.LeaseTTL = clusterLease
		cfg.Placement.Tick = 100 * time.Millisecond
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil {
				nodes[i] = n
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: %v", i, err)
			}
			time.Sleep(500 * time.Millisecond) // the cluster elects its meta leader first
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = nodes[i].Shutdown(ctx)
		})
	}
	return nodes
}

// clusterLoad is concurrent clients writing and reading through random
// servers of the cluster, checking read-your-writes.
type clusterLoad struct {
	clients []*client.Client
	stale   atomic.Int64 // a read older than the reader's own acknowledged write
	cas409  atomic.Int64 // read-then-CAS refused although nobody else writes the key
	retried atomic.Int64 // requests retried with the same command id
	mu      sync.Mutex
	errs    []string
	workers []*worker
}

type worker struct {
	id      int
	appends int    // acknowledged appends (each once)
	puts    int    // acknowledged agent puts
	cas     uint64 // version of the CAS key after the last acknowledged put
	last    *memoryv1.AppendReply
	lastReq *memoryv1.AppendRequest
	maxGap  time.Duration // longest time without a served request
}

func (l *clusterLoad) pick() *client.Client { return l.clients[rand.IntN(len(l.clients))] }

func (l *clusterLoad) fail(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 20 {
		l.errs = append(l.errs, fmt.Sprintf(format, a...))
	}
}

// retry runs op until it succeeds (the same command id every time: a
// timeout is an unknown outcome) or the bound passes.
func (l *clusterLoad) retry(w *worker, what string, op func(c *client.Client) error) bool {
	start := time.Now()
	for {
		err := op(l.pick().WithTimeout(3 * time.Second))
		if err == nil {
			w.maxGap = max(w.maxGap, time.Since(start))
			return true
		}
		var ae *client.Error
		if errors.As(err, &ae) && ae.Code == 409 {
			l.cas409.Add(1)
			l.fail("worker %d %s: 409 %v", w.id, what, err)
			return false
		}
		if time.Since(start) > 4*clusterLease+10*time.Second {
			l.fail("worker %d %s: not served for %s: %v", w.id, what, time.Since(start), err)
			return false
		}
		l.retried.Add(1)
		time.Sleep(50 * time.Millisecond)
	}
}

func (l *clusterLoad) step(w *worker, i int) {
	sid, agent := fmt.Sprintf("w%d", w.id), client.Agent(fmt.Sprintf("a%d", w.id))
	req := &memoryv1.AppendRequest{CommandId: fmt.Sprintf("w%d-append-%d", w.id, i),
		Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("%s note %d", sid, i)}}}
	var rep *memoryv1.AppendReply
	if !l.retry(w, "append", func(c *client.Client) (err error) {
		rep, err = c.Append(context.Background(), sid, req)
		return err
	}) {
		return
	}
	w.appends++
	w.last, w.lastReq = rep, req
	l.retry(w, "context", func(c *client.Client) error {
		cx, err := c.Context(context.Background(), sid)
		if err == nil && cx.GetVersion() < rep.GetResult().GetVersion() {
			l.stale.Add(1)
			l.fail("worker %d: context version %d after acknowledged append at %d", w.id, cx.GetVersion(), rep.GetResult().GetVersion())
		}
		return err
	})

	var put *memoryv1.EntryReply
	if !l.retry(w, "agent put", func(c *client.Client) (err error) {
		put, err = c.Put(context.Background(), agent, &memoryv1.PutEntryRequest{CommandId: fmt.Sprintf("w%d-put-%d", w.id, i),
			Key: "k", Value: fmt.Appendf(nil, "v%d", i)})
		return err
	}) {
		return
	}
	w.puts++
	l.retry(w, "agent get", func(c *client.Client) error {
		e, err := c.GetEntry(context.Background(), agent, "k", 0)
		if err == nil && e.GetVersion() < put.GetEntry().GetVersion() {
			l.stale.Add(1)
			l.fail("worker %d: entry version %d after acknowledged put at %d", w.id, e.GetVersion(), put.GetEntry().GetVersion())
		}
		return err
	})

	project := client.Project(fmt.Sprintf("p%d", w.id))
	var seen uint64
	if !l.retry(w, "cas get", func(c *client.Client) error {
		e, err := c.GetEntry(context.Background(), project, "cas", 0)
		var ae *client.Error
		if errors.As(err, &ae) && ae.Code == 404 {
			seen, err = 0, nil
		} else if err == nil {
			seen = e.GetVersion()
		}
		return err
	}) {
		return
	}
	if seen < w.cas {
		l.stale.Add(1)
		l.fail("worker %d: CAS key read at version %d after acknowledged put at %d", w.id, seen, w.cas)
	}
	cas := fmt.Sprintf("w%d-cas-%d", w.id, i)
	l.retry(w, "cas put", func(c *client.Client) error {
		ev := int64(seen)
		r, err := c.Put(context.Background(), project, &memoryv1.PutEntryRequest{CommandId: cas, Key: "cas",
			Value: fmt.Appendf(nil, "%d", i), ExpectedVersion: &ev})
		if err == nil {
			w.cas = r.GetEntry().GetVersion()
		}
		return err
	})
}

// run drives every worker until stop is closed.
func (l *clusterLoad) run(stop <-chan struct{}, step *int) {
	var wg sync.WaitGroup
	for _, w := range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := *step; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				l.step(w, i)
			}
		}()
	}
	wg.Wait()
	*step += 100000
}

func (l *clusterLoad) phase(t *testing.T, name string, d time.Duration, during func(), step *int) {
	t.Helper()
	for _, w := range l.workers {
		w.maxGap = 0
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { l.run(stop, step); close(done) }()
	if during != nil {
		time.Sleep(d / 4)
		during()
	}
	time.Sleep(d)
	close(stop)
	<-done
	var gap time.Duration
	for _, w := range l.workers {
		gap = max(gap, w.maxGap)
	}
	t.Logf("%s: stale reads %d, spurious 409s %d, retries %d, longest wait for one request %s",
		name, l.stale.Load(), l.cas409.Load(), l.retried.Load(), gap.Round(time.Millisecond))
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) > 0 || l.stale.Load() > 0 || l.cas409.Load() > 0 {
		t.Fatalf("%s: %d stale reads, %d spurious 409s:\n%s", name, l.stale.Load(), l.cas409.Load(), strings.Join(l.errs, "\n"))
	}
}

// TestClusterPlacement: three nats-servers (R3), three nodes, clients
// writing and reading sessions, agent entries and scope entries through
// random servers (so through random nodes): no stale read, no spurious 409
// on read-then-CAS; then one node is killed without a handover under load,
// then one nats-server: every aggregate is served again within the bound
// (lease TTL + a retry), no acknowledged write is lost, and a command
// retried on a surviving node answers as a duplicate.
func TestClusterPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers, three nodes")
	}
	servers, urls := startCluster(t)
	nodes := startClusterNodes(t, urls)
	l := &clusterLoad{}
	for i := range urls {
		order := append([]string{urls[i]}, append(append([]string{}, urls[:i]...), urls[i+1:]...)...)
		nc, err := nats.Connect(strings.Join(order, ","), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		l.clients = append(l.clients, client.New(nc))
	}
	waitSettled(t, nodes...)
	for w := range 6 {
		l.workers = append(l.workers, &worker{id: w})
		sid := fmt.Sprintf("w%d", w)
		if _, err := l.clients[w%3].CreateSession(context.Background(), sid, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			t.Fatal(err)
		}
	}
	step := 0
	l.phase(t, "three nodes", 3*time.Second, nil, &step)

	// The node serving w0 dies without handing anything over.
	var victim int
	for i, nd := range nodes {
		if nd.Serves("w0") {
			victim = i
		}
	}
	w0 := l.workers[0]
	lastReq, lastRep := w0.lastReq, w0.last
	l.phase(t, fmt.Sprintf("node %s killed", nodes[victim].NodeID()), clusterLease+3*time.Second, func() { nodes[victim].Kill() }, &step)

	// The command acknowledged by the dead node, retried on a survivor.
	c := l.clients[(victim+1)%3]
	rep, err := c.Append(context.Background(), "w0", lastReq)
	if err != nil || !rep.GetResult().GetDuplicate() || rep.GetResult().GetVersion() != lastRep.GetResult().GetVersion() {
		t.Fatalf("retry of %s on a surviving node: %v, %v (want a duplicate at version %d)", lastReq.GetCommandId(), rep, err, lastRep.GetResult().GetVersion())
	}

	// Then one nats-server of the three: its clients and its node reconnect
	// to the others; the streams and buckets keep a quorum of two.
	killServer := 0
	if killServer == victim {
		killServer = 1
	}
	l.phase(t, "nats-server s"+fmt.Sprint(killServer+1)+" stopped", clusterLease+3*time.Second, func() { servers[killServer].Shutdown() }, &step)

	// Nothing acknowledged was lost, nothing applied twice.
	live := l.clients[(killServer+1)%3]

	// Lists are the same whichever node answers (each projects the whole
	// log; min_seq waits for the last acknowledged write).
	var minSeq uint64
	for _, c := range l.clients {
		minSeq = max(minSeq, c.LastWriteSeq())
	}
	var first *memoryv1.ListSessionsReply
	for i := range 12 {
		var got *memoryv1.ListSessionsReply
		// A projection still catching up after the server's loss answers
		// 503 after its 2 s min_seq wait: retry, as a client does.
		for deadline := time.Now().Add(30 * time.Second); ; {
			got, err = l.clients[(killServer+1+i%2)%3].ListSessions(context.Background(), &memoryv1.ListSessionsRequest{UserId: "u1", MinSeq: minSeq})
			var ae *client.Error
			if err == nil || !errors.As(err, &ae) || ae.Code != 503 || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = got
			if len(got.GetSessions()) != len(l.workers) {
				t.Fatalf("sessions.list: %d sessions, want %d", len(got.GetSessions()), len(l.workers))
			}
		} else if !proto.Equal(first, got) {
			t.Fatalf("sessions.list differs between answers:\n%v\n%v", first, got)
		}
	}
	for _, w := range l.workers {
		sid := fmt.Sprintf("w%d", w.id)
		cx, err := live.Context(context.Background(), sid)
		if err != nil {
			t.Fatal(err)
		}
		notes := 0
		for _, m := range cx.GetMessages() {
			if strings.HasPrefix(m.GetContent(), sid+" note ") {
				notes++
			}
		}
		if notes != w.appends {
			t.Errorf("session %s: %d acknowledged appends (each once), %d in the context", sid, w.appends, notes)
		}
		e, err := live.GetEntry(context.Background(), client.Agent(fmt.Sprintf("a%d", w.id)), "k", 0)
		if err != nil || e.GetVersion() != uint64(w.puts) {
			t.Errorf("agent a%d: %d acknowledged puts, entry %v %v", w.id, w.puts, e, err)
		}
	}
}

// waitSettled waits until every aggregate is served by exactly one of
// nodes (the last node to join took its partitions), failing if one is
// ever served by two.
func waitSettled(t *testing.T, nodes ...*node.Node) {
	t.Helper()
	// One id in every partition.
	parts := node.DefaultConfig().Placement.Partitions
	probes := make([]string, parts)
	for i, left := 0, parts; left > 0; i++ {
		id := fmt.Sprintf("probe-%d", i)
		if p := placement.Partition(id, parts); probes[p] == "" {
			probes[p] = id
			left--
		}
	}
	// Settled: each partition served by exactly one node, every node
	// serving some, and the same for a second (a rebalance hands
	// partitions over one by one).
	var last string
	var since time.Time
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		settled := true
		var owners strings.Builder
		counts := make([]int, len(nodes))
		for _, id := range probes {
			n := 0
			for i, nd := range nodes {
				if nd.Serves(id) {
					n++
					counts[i]++
					owners.WriteString(nd.NodeID())
				}
			}
			if n > 1 {
				t.Fatalf("aggregate %s served by %d nodes", id, n)
			}
			settled = settled && n == 1
			owners.WriteByte(',')
		}
		settled = settled && !slices.Contains(counts, 0)
		if !settled || owners.String() != last {
			last, since = owners.String(), time.Now()
		} else if time.Since(since) > time.Second {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions not settled within 30 s: %v served", counts)
		}
	}
}
