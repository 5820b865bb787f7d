package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// splitParts is the corpus partitions of the split-projection tests.
const splitParts = 6

// startSplitCluster starts three servers and three nodes with the log in
// six streams and the read model in splitParts corpus partitions.
func startSplitCluster(t *testing.T) ([]*node.Node, []*client.Client, func()) {
	t.Helper()
	cl := startNATSCluster(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var nodes []*node.Node
	for i := range 3 {
		nodes = append(nodes, startR3Node(t, cl.urls[i:i+1], fmt.Sprintf("n%d", i), func(c *node.Config) {
			c.LogPartitions = 6
			c.ProjectionPartitions = splitParts
			c.LogWindow = 0
			c.Now = func() time.Time { return at }
			order := append([]string{cl.urls[i]}, append(append([]string{}, cl.urls[:i]...), cl.urls[i+1:]...)...)
			c.NATSURL = strings.Join(order, ",")
		}))
	}
	clients, js := clusterClients(t, cl)
	waitSplitServed(t, nodes)
	return nodes, clients, func() { settleCluster(t, js, 6, nodes) }
}

// waitSplitServed waits until the nodes together answer every partition,
// each node two.
func waitSplitServed(t *testing.T, nodes []*node.Node) {
	t.Helper()
	eventually(t, "every corpus partition served, two per node", func() (bool, string) {
		served := map[int]string{}
		var per []int
		for _, n := range nodes {
			held := n.SplitPartitionsForTest()
			per = append(per, len(held))
			for c := range held {
				served[c] = n.NodeID()
			}
		}
		ok := len(served) == splitParts
		for _, k := range per {
			ok = ok && k == splitParts/len(nodes)
		}
		return ok, fmt.Sprintf("served %v, per node %v", served, per)
	})
}

// TestSplitProjectionClusterReads: three servers, three nodes, the log in
// six streams and the read model in six corpus partitions, two on each
// node: every reply of partitionScript (sessions, appends, session and
// user-scope search top 20 with scores, contexts with cross-session
// recall, lists, watches), each write settled on every node before the
// next request, equals a single node's of the log in one stream.
func TestSplitProjectionClusterReads(t *testing.T) {
	_, nc1 := partitionedNode(t, 1, "")
	one := partitionScript(t, client.New(nc1))
	_, clients, settle := startSplitCluster(t)
	got := partitionScriptSettled(t, clients[0], settle)
	if len(one) != len(got) {
		t.Fatalf("%d replies vs %d", len(one), len(got))
	}
	n := 0
	for i := range one {
		if one[i] != got[i] {
			n++
			t.Errorf("reply %d differs: %s", i, firstDifference(one[i], got[i]))
		}
	}
	t.Logf("%d of %d replies differ from one node's", n, len(one))
}

// TestSplitProjectionShares: on a load of 36 users' sessions through the
// three nodes, each node's partition files hold a third of the sessions
// and of the messages (±25 %), and together every one exactly once.
func TestSplitProjectionShares(t *testing.T) {
	nodes, clients, settle := startSplitCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const users, perUser, turns = 36, 2, 4
	for u := range users {
		for j := range perUser {
			c := clients[(u+j)%len(clients)]
			id := fmt.Sprintf("load-%d-%d", u, j)
			if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: fmt.Sprintf("user-%d", u)}); err != nil {
				t.Fatal(err)
			}
			for k := range turns {
				if _, err := c.AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER,
					Content: fmt.Sprintf("turn %d of %s about the heron boat", k, id)}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	settle()
	total := [2]int{}
	var per [][2]int
	for _, n := range nodes {
		var sum [2]int
		for _, v := range n.SplitPartitionsForTest() {
			sum[0] += v[0]
			sum[1] += v[1]
		}
		per = append(per, sum)
		total[0] += sum[0]
		total[1] += sum[1]
	}
	t.Logf("sessions and messages per node: %v (total %v)", per, total)
	if total[0] != users*perUser || total[1] != users*perUser*turns {
		t.Fatalf("the nodes hold %v sessions and messages, want %d and %d, each once", total, users*perUser, users*perUser*turns)
	}
	for i, s := range per {
		for j, what := range []string{"sessions", "messages"} {
			share := float64(s[j]) / float64(total[j])
			if share < 0.25 || share > 0.42 {
				t.Errorf("node %d holds %.2f of the %s, want a third ±25%%", i, share, what)
			}
		}
	}
}
