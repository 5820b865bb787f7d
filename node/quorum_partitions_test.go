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
)

// partialQuorumK is the log's partitions in TestPartitionQuorumLoss.
const partialQuorumK = 6

// partialQuorumLoss (TestQuorumLoss/K6partial): a node with the log in six
// R3 partition streams on a five-server cluster. Two servers stop such
// that some partition streams lose their quorum (both stopped servers are
// in their replica set) and the others keep it. Appends to sessions of the
// lost partitions are answered 503 within noQuorumAnswer, naming the
// partition's stream; appends to sessions of the other partitions are
// acknowledged; /healthz answers 200 "degraded" naming the lost
// partitions, and agentmem_log_partition_available is 0 for exactly those.
// Once the servers return every partition's appends are acknowledged
// again, without a node restart, and every acknowledged append is in the
// log once.
func partialQuorumLoss(t *testing.T) {
	// The servers' stream placement is JetStream's: a cluster where no two
	// servers fit (pickPartialLoss) is replaced by a new one.
	var (
		cl   *natsCluster
		n    *node.Node
		nc   *nats.Conn
		js   jetstream.JetStream
		stop []string
		lost []int
	)
	for attempt := 1; ; attempt++ {
		cl = newNATSClusterOf(t, 5)
		cl.start(0, 1, 2, 3, 4)
		// The node and the client on s1, which stays.
		n = startR3Node(t, cl.urls[:1], "n0", func(c *node.Config) {
			c.LogPartitions = partialQuorumK
			c.HTTPAddr = "127.0.0.1:0"
		})
		var err error
		if nc, err = nats.Connect(cl.urls[0], nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if js, err = jetstream.New(nc); err != nil {
			t.Fatal(err)
		}
		var peers map[string][]string
		if stop, lost, peers = pickPartialLoss(t, js, cl); stop != nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("no two servers but s1 whose loss takes the quorum of some log partitions and of no bucket, in %d clusters; the last: %v", attempt, peers)
		}
		t.Logf("no two servers fit (%v): a new cluster", peers)
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_ = n.Shutdown(sctx)
		cancel()
		nc.Close()
		cl.stop(0, 1, 2, 3, 4)
	}
	c := client.New(nc).WithTimeout(noQuorumClients)
	ctx := context.Background()

	// A session per partition, created before the servers stop.
	sids := make([]string, partialQuorumK)
	for i := 0; slices.Contains(sids, ""); i++ {
		id := fmt.Sprintf("pq%d", i)
		if p := events.LogPartition(id, partialQuorumK); sids[p] == "" {
			sids[p] = id
		}
	}
	sent := 0
	var acked []string
	appendTo := func(p int) (time.Duration, error) {
		sent++
		content := fmt.Sprintf("p%d note %d", p, sent)
		began := time.Now()
		_, err := c.AppendMessages(ctx, sids[p], userInput(content))
		if err == nil {
			acked = append(acked, content)
		}
		return time.Since(began), err
	}
	for p, sid := range sids {
		if _, err := c.CreateSession(ctx, sid, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := appendTo(p); err != nil {
			t.Fatal(err)
		}
	}

	t.Logf("stopping %v: partitions %v lose their quorum", stop, lost)
	var idx []int
	for _, name := range stop {
		idx = append(idx, slices.Index(cl.names(), name))
	}
	cl.stop(idx...)
	stopped := time.Now()

	// While stopped: a lost partition's append is 503 at once (the first
	// may have been in flight), a kept one's is acknowledged once its
	// stream has a leader again (one of the stopped servers may have led
	// it): after keptSettle, every kept append must be acknowledged.
	const keptSettle = 10 * time.Second
	type tally struct {
		answers, slow, not503, unnamed, failed int
		slowest                                time.Duration
		took                                   []time.Duration
		firstErr                               error
	}
	tallies := make([]tally, partialQuorumK)
	for time.Since(stopped) < keptSettle+5*time.Second {
		for p := range partialQuorumK {
			took, err := appendTo(p)
			tl := &tallies[p]
			tl.answers++
			tl.slowest = max(tl.slowest, took)
			tl.took = append(tl.took, took)
			if slices.Contains(lost, p) {
				if took > noQuorumAnswer {
					tl.slow++
				}
				// The reason names the partition and its stream.
				named := fmt.Sprintf("log partition %d (stream %s)", p, events.PartitionStream("MEM", p, partialQuorumK))
				switch {
				case err == nil:
					t.Errorf("partition %d without quorum: append acknowledged", p)
				case client.Code(err) != 503:
					tl.not503++
				case !strings.Contains(err.Error(), named):
					tl.unnamed++
				}
				if err != nil && (tl.firstErr == nil || tl.answers == 2) {
					tl.firstErr = err // the second: the first may have been in flight
				}
				continue
			}
			if err != nil && time.Since(stopped) > keptSettle {
				tl.failed++
				if tl.firstErr == nil {
					tl.firstErr = err
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for p, tl := range tallies {
		slices.Sort(tl.took)
		t.Logf("partition %d (lost %t): %d appends, median %s, slowest %s, %d slow, %d not 503, %d not naming the stream, %d failed after %s; first error: %v",
			p, slices.Contains(lost, p), tl.answers, tl.took[len(tl.took)/2].Round(100*time.Microsecond), tl.slowest.Round(time.Millisecond), tl.slow, tl.not503, tl.unnamed, tl.failed, keptSettle, tl.firstErr)
		if tl.slow > 1 || tl.not503 > 1 || tl.unnamed > 1 {
			t.Errorf("partition %d without quorum: of %d appends %d answered after %s, %d not 503, %d not naming its stream",
				p, tl.answers, tl.slow, noQuorumAnswer, tl.not503, tl.unnamed)
		}
		if tl.failed > 0 {
			t.Errorf("partition %d kept its quorum, yet %d of its appends failed %s after the servers stopped: %v", p, tl.failed, keptSettle, tl.firstErr)
		}
	}

	code, body := healthz(t, n)
	t.Logf("/healthz while partitions %v are lost: %d %v", lost, code, body)
	if code != http.StatusOK || body["status"] != "degraded" {
		t.Errorf("/healthz with partitions %v lost: %d %v, want 200 degraded", lost, code, body)
	}
	var named []string
	parts, _ := body["log_partitions"].([]any)
	for _, lp := range parts {
		if m, ok := lp.(map[string]any); ok && m["ok"] != true {
			named = append(named, fmt.Sprint(m["stream"]))
		}
	}
	for p := range partialQuorumK {
		stream := events.PartitionStream("MEM", p, partialQuorumK)
		if slices.Contains(named, stream) != slices.Contains(lost, p) {
			t.Errorf("/healthz log_partitions names %s unavailable: %t, lost: %t (%v)", stream, slices.Contains(named, stream), slices.Contains(lost, p), parts)
		}
		if got, want := partitionGauge(t, n, p), b2f(!slices.Contains(lost, p)); got != want {
			t.Errorf("agentmem_log_partition_available{partition=%d} = %v, want %v", p, got, want)
		}
	}
	if got := gaugeOf(t, n, "agentmem_log_available"); got != 1 {
		t.Errorf("agentmem_log_available = %v with only partitions %v lost, want 1", got, lost)
	}

	cl.start(idx...)
	back := time.Now()
	for p := range partialQuorumK {
		for {
			_, err := appendTo(p)
			if err == nil {
				break
			}
			if time.Since(back) > quorumResumed {
				t.Fatalf("partition %d: no append acknowledged within %s after the servers returned: %v", p, quorumResumed, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("servers back: every partition acknowledged an append within %s", time.Since(back).Round(time.Millisecond))
	for {
		code, body := healthz(t, n)
		if code == http.StatusOK && body["status"] == "ok" {
			break
		}
		if time.Since(back) > quorumResumed {
			t.Fatalf("/healthz %s after the servers returned: %d %v", quorumResumed, code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkAckedContents(t, acked, js)
}

// names are the servers' names, s1 first.
func (c *natsCluster) names() []string {
	var out []string
	for _, cfg := range c.cfgs {
		out = append(out, cfg.ServerName)
	}
	return out
}

// pickPartialLoss waits until every stream has its three replicas placed
// and picks two servers, not s1, whose stopping leaves every bucket
// (KV_*: the placement leases, the snapshots) and some log partitions with
// a quorum: stop are their names, lost the log partitions that lose it
// (some, not all); stop is nil when no two servers do. The object stores
// (OBJ_*) may lose theirs: no append reads them.
func pickPartialLoss(t *testing.T, js jetstream.JetStream, cl *natsCluster) (stop []string, lost []int, peers map[string][]string) {
	t.Helper()
	peers = map[string][]string{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		placed := streamPeers(t, js, peers)
		if placed && len(peers) > partialQuorumK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams not placed on three replicas within 30 s: %v", peers)
		}
		time.Sleep(200 * time.Millisecond)
	}
	names := cl.names()
	for i := 1; i < len(names); i++ {
		for j := i + 1; j < len(names); j++ {
			a, b := names[i], names[j]
			var parts []int
			others := true
			for stream, set := range peers {
				if !slices.Contains(set, a) || !slices.Contains(set, b) {
					continue
				}
				if p, ok := partitionOfStream(stream); ok {
					parts = append(parts, p)
				} else if strings.HasPrefix(stream, "KV_") {
					others = false
				}
			}
			if others && len(parts) > 0 && len(parts) < partialQuorumK {
				slices.Sort(parts)
				return []string{a, b}, parts, peers
			}
		}
	}
	return nil, nil, peers
}

// partitionOfStream is the partition of a log partition stream's name.
func partitionOfStream(stream string) (int, bool) {
	for p := range partialQuorumK {
		if stream == events.PartitionStream("MEM", p, partialQuorumK) {
			return p, true
		}
	}
	return 0, false
}

// partitionGauge is agentmem_log_partition_available{partition=p}.
func partitionGauge(t *testing.T, n *node.Node, p int) float64 {
	t.Helper()
	mfs, err := n.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "agentmem_log_partition_available" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "partition" && l.GetValue() == fmt.Sprint(p) {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no agentmem_log_partition_available{partition=%d}", p)
	return 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// streamPeers fills peers (cleared first) with each stream's leader and
// its two replicas; placed is false while some stream has no leader or
// not two replicas yet.
func streamPeers(t *testing.T, js jetstream.JetStream, peers map[string][]string) (placed bool) {
	t.Helper()
	clear(peers)
	placed = true
	for name := range js.StreamNames(context.Background()).Name() {
		s, err := js.Stream(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		ci := s.CachedInfo().Cluster
		if ci == nil || ci.Leader == "" || len(ci.Replicas) != 2 {
			placed = false
			continue
		}
		peers[name] = []string{ci.Leader, ci.Replicas[0].Name, ci.Replicas[1].Name}
	}
	return placed
}
