package node_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/placement"
)

// Bounds of TestQuorumLoss/K1placement: after placementSettle from the
// servers' stop (a lease, then the log stream's leader elected again if
// it was on a stopped server), every append must be acknowledged until
// placementLossFor; then the servers return.
const (
	placementSettle  = clusterLease + 7*time.Second
	placementLossFor = placementSettle + 8*time.Second
	placementNodes   = 3
	placementWriters = 9
)

// placementQuorumLoss (TestQuorumLoss/K1placement): three nodes on a
// five-server cluster, R3, the log in one stream. Two servers stop such
// that the placement bucket's stream loses its quorum while the log
// stream MEM keeps its: no lease can be written. Each node keeps serving
// the partitions it held (the log's expected-last-subject-sequence fences
// appends): every append made after placementSettle is acknowledged, and
// /healthz says 200 "degraded" with failing ["placement"] on each node
// that serves partitions, agentmem_placement_available 0. Once the
// servers return every session's appends are acknowledged again and
// /healthz says ok on every node, without a node restart; every
// acknowledged append is in the log once.
func placementQuorumLoss(t *testing.T) {
	var (
		cl    *natsCluster
		nodes []*node.Node
		nc    *nats.Conn
		js    jetstream.JetStream
		stop  []string
	)
	for attempt := 1; ; attempt++ {
		cl = newNATSClusterOf(t, 5)
		cl.start(0, 1, 2, 3, 4)
		// The nodes and the client on s1, which stays.
		nodes = nodes[:0]
		for i := range placementNodes {
			nodes = append(nodes, startR3Node(t, cl.urls[:1], fmt.Sprintf("n%d", i), func(c *node.Config) {
				c.HTTPAddr = "127.0.0.1:0"
			}))
		}
		var err error
		if nc, err = nats.Connect(cl.urls[0], nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if js, err = jetstream.New(nc); err != nil {
			t.Fatal(err)
		}
		var peers map[string][]string
		var note string
		if stop, note, peers = pickPlacementLoss(t, js, cl); stop != nil {
			t.Logf("stopping %v: %s (replicas %v)", stop, note, peers)
			break
		}
		if attempt == 3 {
			t.Fatalf("no two servers but s1 whose loss takes the placement bucket's quorum and not the log's, in %d clusters; the last: %v", attempt, peers)
		}
		t.Logf("no two servers fit (%v): a new cluster", peers)
		for _, n := range nodes {
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			_ = n.Shutdown(sctx)
			cancel()
		}
		nc.Close()
		cl.stop(0, 1, 2, 3, 4)
	}
	keepLogLeader(t, nc, js, stop)
	waitServedOnce(t, nodes)
	c := client.New(nc).WithTimeout(noQuorumClients)
	w := startWriters(t, c, placementWriters)
	defer w.stop()
	time.Sleep(time.Second)
	for i, n := range nodes {
		code, body := healthz(t, n)
		t.Logf("n%d before: serves %d partitions; /healthz %d %v", i, servedPartitions(n), code, body)
	}

	var idx []int
	for _, name := range stop {
		idx = append(idx, slices.Index(cl.names(), name))
	}
	summarize(t, "before the servers stopped", w.between(time.Time{}, time.Now()))
	cl.stop(idx...)
	stopped := time.Now()
	served := make([]int, len(nodes))
	for time.Since(stopped) < placementLossFor {
		for i, n := range nodes {
			if s := servedPartitions(n); s != served[i] {
				code, body := healthz(t, n)
				t.Logf("n%d at +%s: serves %d partitions; /healthz %d %v", i, time.Since(stopped).Round(100*time.Millisecond), s, code, body)
				served[i] = s
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	summarize(t, "before the lease ran out", w.between(stopped, stopped.Add(clusterLease)))
	summarize(t, fmt.Sprintf("from %s to %s", clusterLease, placementSettle), w.between(stopped.Add(clusterLease), stopped.Add(placementSettle)))
	during := w.between(stopped.Add(placementSettle), time.Now())
	byCode := summarize(t, fmt.Sprintf("after %s", placementSettle), during)
	if len(during) == 0 || byCode[0] != len(during) {
		t.Errorf("placement bucket without quorum, log with: %d of %d appends after %s acknowledged (by code %v), want all",
			byCode[0], len(during), placementSettle, byCode)
		for _, r := range during {
			if r.err != nil {
				t.Logf("first failure: after %s: %v", r.took.Round(time.Millisecond), r.err)
				break
			}
		}
	}
	for i, n := range nodes {
		code, body := healthz(t, n)
		t.Logf("n%d at the end of the loss: serves %d partitions, agentmem_placement_available %v; /healthz %d %v",
			i, servedPartitions(n), gaugeOf(t, n, "agentmem_placement_available"), code, body)
		failing, _ := body["failing"].([]any)
		pl, _ := body["placement"].(map[string]any)
		switch {
		case servedPartitions(n) > 0 && (code != http.StatusOK || body["status"] != "degraded"):
			t.Errorf("n%d serves partitions without the placement quorum: /healthz %d %v, want 200 degraded", i, code, body["status"])
		case servedPartitions(n) == 0 && (code != http.StatusServiceUnavailable || body["status"] != "unavailable"):
			t.Errorf("n%d serves no partition without the placement quorum: /healthz %d %v, want 503 unavailable", i, code, body["status"])
		case !slices.Contains(failing, any("placement")) || pl == nil || pl["ok"] != false || pl["reason"] != "no_quorum" ||
			!strings.Contains(fmt.Sprint(pl["detail"]), "KV_"+placement.BucketFor(events.StreamName)):
			t.Errorf("n%d: /healthz failing %v, placement %v: want failing [placement], no_quorum naming the bucket's stream", i, failing, pl)
		}
		if got := gaugeOf(t, n, "agentmem_placement_available"); got != 0 {
			t.Errorf("n%d: agentmem_placement_available = %v without the bucket's quorum, want 0", i, got)
		}
	}

	// A node that stops while the bucket is lost cannot hand its partitions
	// over and no other node can take them: their requests are answered
	// 503 at once, naming the placement bucket (not at the client's
	// timeout).
	victim := -1
	for i, n := range nodes {
		if n.Serves("w0") {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatal("no node serves w0 during the loss")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	began := time.Now()
	if err := nodes[victim].Shutdown(sctx); err != nil {
		t.Logf("n%d shutdown: %v", victim, err)
	}
	cancel()
	t.Logf("n%d (serving w0) stopped in %s", victim, time.Since(began).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	from := time.Now()
	time.Sleep(3 * time.Second)
	orphan := w.sessionBetween("w0", from, time.Now())
	byCode = summarize(t, fmt.Sprintf("w0 once n%d stopped", victim), orphan)
	if len(orphan) == 0 || byCode[503] != len(orphan) {
		t.Errorf("w0, its node stopped, the bucket lost: %d of %d appends answered 503 (by code %v), want all", byCode[503], len(orphan), byCode)
	}
	for _, r := range orphan {
		if r.took > noQuorumAnswer || r.err == nil || !strings.Contains(r.err.Error(), "placement bucket") {
			t.Errorf("w0, its node stopped, the bucket lost: an append answered after %s: %v; want 503 within %s naming the placement bucket",
				r.took.Round(time.Millisecond), r.err, noQuorumAnswer)
			break
		}
	}
	if len(orphan) > 0 && orphan[0].err != nil {
		t.Logf("w0's answer: %v", orphan[0].err)
	}
	nodes = slices.Delete(nodes, victim, victim+1)

	cl.start(idx...)
	back := time.Now()
	for {
		missing := 0
		for i := range placementWriters {
			if !w.sessionAckedAfter(fmt.Sprintf("w%d", i), back) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Since(back) > quorumResumed {
			t.Fatalf("%d of %d sessions had no append acknowledged within %s after the servers returned", missing, placementWriters, quorumResumed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("servers back: every session acknowledged an append within %s", time.Since(back).Round(time.Millisecond))
	for i, n := range nodes {
		for {
			code, body := healthz(t, n)
			if code == http.StatusOK && body["status"] == "ok" {
				break
			}
			if time.Since(back) > quorumResumed {
				t.Fatalf("n%d: /healthz %s after the servers returned: %d %v", i, quorumResumed, code, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := gaugeOf(t, n, "agentmem_placement_available"); got != 1 {
			t.Errorf("n%d: agentmem_placement_available = %v once the servers returned, want 1", i, got)
		}
	}
	after := w.between(back, time.Now())
	summarize(t, "after the servers returned", after)
	logFailures(t, after)
	w.stop()
	checkNoAckedWriteLost(t, w, js)
}

// logFailures logs how many of rs failed with each session and error.
func logFailures(t *testing.T, rs []appendResult) {
	t.Helper()
	type key struct{ sid, err string }
	n := map[key]int{}
	var order []key
	for _, r := range rs {
		if r.err == nil {
			continue
		}
		k := key{r.sid, r.err.Error()}
		if len(k.err) > 240 {
			k.err = k.err[:240]
		}
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	for _, k := range order {
		t.Logf("  %d× %s: %s", n[k], k.sid, k.err)
	}
}

// sessionBetween returns the results of appends to session sid started in
// [from, to).
func (w *writers) sessionBetween(sid string, from, to time.Time) []appendResult {
	var out []appendResult
	for _, r := range w.between(from, to) {
		if r.sid == sid {
			out = append(out, r)
		}
	}
	return out
}

// sessionAckedAfter reports whether an append to session sid started
// after at was acknowledged.
func (w *writers) sessionAckedAfter(sid string, at time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.results {
		if r.code == 0 && r.sid == sid && r.at.After(at) {
			return true
		}
	}
	return false
}

// partitionIDs are an aggregate id per placement partition (of the
// default 64).
var partitionIDs = func() []string {
	n := placement.DefaultConfig().Partitions
	ids := make([]string, n)
	for i, left := 0, n; left > 0; i++ {
		id := fmt.Sprintf("pid%d", i)
		if p := placement.Partition(id, n); ids[p] == "" {
			ids[p] = id
			left--
		}
	}
	return ids
}()

// servedPartitions is how many placement partitions n serves now.
func servedPartitions(n *node.Node) int {
	k := 0
	for _, id := range partitionIDs {
		if n.Serves(id) {
			k++
		}
	}
	return k
}

// waitServedOnce waits until every partition is served by exactly one
// node and every node serves some.
func waitServedOnce(t *testing.T, nodes []*node.Node) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		once := true
		for _, id := range partitionIDs {
			k := 0
			for _, n := range nodes {
				if n.Serves(id) {
					k++
				}
			}
			once = once && k == 1
		}
		for _, n := range nodes {
			once = once && servedPartitions(n) > 0
		}
		if once {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("partitions not served once each by the nodes within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// keepLogLeader moves the log stream's leader off the servers stop (a
// stepdown naming one of its other replicas) and waits until it is: the
// test is about the placement bucket, not the log's leader election
// (which took more than 10 s once under -race on 2 cores).
func keepLogLeader(t *testing.T, nc *nats.Conn, js jetstream.JetStream, stop []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := js.Stream(context.Background(), events.StreamName)
		if err != nil {
			t.Fatal(err)
		}
		ci := s.CachedInfo().Cluster
		if ci.Leader != "" && !slices.Contains(stop, ci.Leader) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log stream's leader is still %q, to be stopped (%v), after 30 s", ci.Leader, stop)
		}
		for _, r := range ci.Replicas {
			if ci.Leader != "" && !slices.Contains(stop, r.Name) {
				msg, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+events.StreamName,
					[]byte(`{"placement":{"preferred":"`+r.Name+`"}}`), 5*time.Second)
				if err == nil {
					t.Logf("the log stream's leader %s steps down to %s: %s", ci.Leader, r.Name, msg.Data)
				}
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// pickPlacementLoss waits until every stream has its three replicas placed
// and picks two servers, not s1, in the placement bucket's replica set and
// not both in the log stream's: stopping them takes the bucket's quorum
// and leaves the log's. Among those it prefers a pair that leaves every
// other bucket its quorum. note says what else
// loses its quorum; stop is nil when no two servers fit.
func pickPlacementLoss(t *testing.T, js jetstream.JetStream, cl *natsCluster) (stop []string, note string, peers map[string][]string) {
	t.Helper()
	peers = map[string][]string{}
	bucket := "KV_" + placement.BucketFor(events.StreamName)
	deadline := time.Now().Add(30 * time.Second)
	for {
		placed := streamPeers(t, js, peers)
		if placed && peers[bucket] != nil && peers[events.StreamName] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams not placed on three replicas within 30 s: %v", peers)
		}
		time.Sleep(200 * time.Millisecond)
	}
	names := cl.names()
	best := -1
	for i := 1; i < len(names); i++ {
		for j := i + 1; j < len(names); j++ {
			a, b := names[i], names[j]
			both := func(stream string) bool {
				return slices.Contains(peers[stream], a) && slices.Contains(peers[stream], b)
			}
			if !both(bucket) || both(events.StreamName) {
				continue
			}
			var others []string
			for stream := range peers {
				if stream != bucket && both(stream) {
					others = append(others, stream)
				}
			}
			score := 0
			if len(others) == 0 {
				score++
			}
			if score > best {
				best, stop = score, []string{a, b}
				slices.Sort(others)
				note = fmt.Sprintf("%s loses its quorum, %s keeps its (leader %s); also without quorum: %v",
					bucket, events.StreamName, peers[events.StreamName][0], others)
			}
		}
	}
	return stop, note, peers
}
