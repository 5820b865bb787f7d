package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// splitParts is the corpus partitions of the split-projection tests.
const splitParts = 6

// splitCluster is three servers and three nodes with the log in six
// streams and the read model in splitParts corpus partitions.
type splitCluster struct {
	cl      *natsCluster
	nodes   []*node.Node
	clients []*client.Client
	js      jetstream.JetStream
	dirs    []string
}

// config is node i's configuration (its data dir kept across restarts).
func (s *splitCluster) config(i int) func(*node.Config) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return func(c *node.Config) {
		if s.dirs[i] == "" {
			s.dirs[i] = c.DataDir
		}
		c.DataDir = s.dirs[i]
		c.LogPartitions = 6
		c.ProjectionPartitions = splitParts
		c.LogWindow = 0
		c.Now = func() time.Time { return at }
		order := append([]string{s.cl.urls[i]}, append(append([]string{}, s.cl.urls[:i]...), s.cl.urls[i+1:]...)...)
		c.NATSURL = strings.Join(order, ",")
	}
}

func (s *splitCluster) settle(t *testing.T, nodes ...*node.Node) { settleCluster(t, s.js, 6, nodes) }

func startSplit(t *testing.T) *splitCluster {
	t.Helper()
	s := &splitCluster{cl: startNATSCluster(t), dirs: make([]string, 3)}
	for i := range 3 {
		s.nodes = append(s.nodes, startR3Node(t, s.cl.urls[i:i+1], fmt.Sprintf("n%d", i), s.config(i)))
	}
	s.clients, s.js = clusterClients(t, s.cl)
	waitSplitServed(t, s.nodes)
	return s
}

// startSplitCluster starts a splitCluster and returns its nodes, a client
// of each and a function that waits until every node applied the log.
func startSplitCluster(t *testing.T) ([]*node.Node, []*client.Client, func()) {
	t.Helper()
	s := startSplit(t)
	return s.nodes, s.clients, func() { s.settle(t, s.nodes...) }
}

// waitSplitServed waits until the nodes together answer every partition,
// each node two.
func waitSplitServed(t *testing.T, nodes []*node.Node) {
	t.Helper()
	// A node that started alone took every partition; it hands the
	// others' over once they caught up and its grace period ran out.
	eventuallyWithin(t, time.Minute, "every corpus partition served, as many per node", func() (bool, string) {
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
	var total [3]int64
	var per [][3]int64
	for _, n := range nodes {
		var sum [3]int64
		for _, v := range n.SplitPartitionsForTest() {
			for i := range sum {
				sum[i] += v[i]
			}
		}
		per = append(per, sum)
		for i := range total {
			total[i] += sum[i]
		}
	}
	t.Logf("sessions, messages and bytes in use per node: %v (total %v)", per, total)
	if total[0] != users*perUser || total[1] != users*perUser*turns {
		t.Fatalf("the nodes hold %v sessions and messages, want %d and %d, each once", total[:2], users*perUser, users*perUser*turns)
	}
	for i, s := range per {
		for j, what := range []string{"sessions", "messages", "bytes in use"} {
			share := float64(s[j]) / float64(total[j])
			if share < 0.25 || share > 0.42 {
				t.Errorf("node %d holds %.2f of the %s, want a third ±25%%", i, share, what)
			}
		}
	}
}

// eventuallyWithin is eventually with its own bound.
func eventuallyWithin(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after %s", what, got, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSplitProjectionKill: a node of the split cluster killed (-9): the
// users whose corpus partitions it answered are searched (user scope) and
// their new sessions' contexts recall their history again through the
// others, and once it is started again on its data dir it answers its
// partitions again (its files resumed from their checkpoints), the reads
// unchanged.
func TestSplitProjectionKill(t *testing.T) {
	s := startSplit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := s.clients[1]
	const users = 24
	for u := range users {
		id := fmt.Sprintf("k-%d", u)
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: fmt.Sprintf("user-%d", u)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, userInput(fmt.Sprintf("%s: the kestrel nests on water tower %d", id, u))); err != nil {
			t.Fatal(err)
		}
	}
	s.settle(t, s.nodes...)
	victim := s.nodes[0]
	held := victim.SplitPartitionsForTest()
	var theirs []int
	for u := range users {
		if _, ok := held[projections.CorpusPartition(fmt.Sprintf("user-%d", u), splitParts)]; ok {
			theirs = append(theirs, u)
		}
	}
	if len(theirs) < 2 {
		t.Fatalf("the victim answers for %d of %d users (partitions %v)", len(theirs), users, held)
	}
	reads := func(c *client.Client, u int) error {
		id := fmt.Sprintf("k-%d", u)
		rep, err := c.Search(ctx, id, &memoryv1.SearchRequest{Query: "kestrel water tower", Scope: memoryv1.SearchScope_SEARCH_SCOPE_USER})
		if err != nil {
			return err
		}
		for _, h := range rep.GetHits() {
			if h.GetSessionId() == id && strings.Contains(h.GetMessage().GetContent(), "water tower") {
				return nil
			}
		}
		return fmt.Errorf("user-scope search of %s: %d hits, none its message", id, len(rep.GetHits()))
	}
	killed := time.Now()
	victim.Kill()
	var readTook time.Duration
	for _, u := range theirs {
		for {
			err := reads(c.WithTimeout(10*time.Second), u)
			if err == nil {
				break
			}
			if time.Since(killed) > time.Minute {
				t.Fatalf("user-%d: not searched a minute after the kill: %v", u, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		readTook = max(readTook, time.Since(killed))
	}
	// A new session of each such user recalls the history in its context.
	for _, u := range theirs {
		id := fmt.Sprintf("k-%d-new", u)
		if _, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: fmt.Sprintf("user-%d", u)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendMessages(ctx, id, userInput("where does the kestrel nest?")); err != nil {
			t.Fatal(err)
		}
		cx, err := c.Context(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fmt.Sprint(cx.GetMessages()), fmt.Sprintf("water tower %d", u)) {
			t.Fatalf("the context of %s does not recall the user's history: %v", id, cx.GetMessages())
		}
	}
	t.Logf("kill -9 of a node answering %d users' partitions: their user-scope searches answered again after %s",
		len(theirs), readTook.Round(time.Millisecond))

	again := startR3Node(t, s.cl.urls[0:1], "n0", s.config(0))
	waitSplitServed(t, []*node.Node{again, s.nodes[1], s.nodes[2]})
	s.settle(t, again, s.nodes[1], s.nodes[2])
	for _, u := range theirs {
		if err := reads(s.clients[0].WithTimeout(10*time.Second), u); err != nil {
			t.Fatalf("after the restart: %v", err)
		}
	}
	if got := again.SplitPartitionsForTest(); len(got) != splitParts/3 {
		t.Fatalf("the restarted node answers partitions %v, want %d", got, splitParts/3)
	}
}

// TestSplitProjectionOneNode: one node with the log in six streams and the
// read model in six corpus partitions (all its own) answers
// partitionScript as a node of the whole read model does, and a session
// reads a global pattern library (the shared corpus's partition) into its
// ROM.
func TestSplitProjectionOneNode(t *testing.T) {
	_, nc1 := partitionedNode(t, 1, "")
	one := partitionScript(t, client.New(nc1))
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.LogPartitions = 6
		c.ProjectionPartitions = splitParts
		c.LogWindow = 0
		c.HTTPAddr = "127.0.0.1:0"
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		c.Now = func() time.Time { return at }
	})
	waitSplitServed(t, []*node.Node{n})
	if code, body := healthz(t, n); code != 200 || fmt.Sprint(body["projection_partitions"]) != "map[partitions:6 serving:[0 1 2 3 4 5]]" {
		t.Fatalf("/healthz %d %v, want 200 and the six partitions served", code, body)
	}
	if g := gaugeOf(t, n, "agentmem_projection_partitions_served"); g != 6 {
		t.Fatalf("agentmem_projection_partitions_served = %v, want 6", g)
	}
	c := client.New(nc)
	got := partitionScript(t, c)
	if len(one) != len(got) {
		t.Fatalf("%d replies vs %d", len(one), len(got))
	}
	for i := range one {
		if one[i] != got[i] {
			t.Errorf("reply %d differs: %s", i, firstDifference(one[i], got[i]))
		}
	}
	ctx := context.Background()
	if _, err := c.Put(ctx, client.Global(), &memoryv1.PutEntryRequest{Key: node.PatternKeyPrefix + "sql/01-binds", Value: []byte("Use bind parameters.")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SearchEntries(ctx, client.Global(), &memoryv1.SearchEntriesRequest{Query: "parameters"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, "dba", &memoryv1.CreateSessionRequest{SystemPrompt: "You are a DBA.", PatternLibraries: []string{"sql"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "dba", userInput("list the slow queries")); err != nil {
		t.Fatal(err)
	}
	cx, err := c.Context(ctx, "dba")
	if err != nil {
		t.Fatal(err)
	}
	if rom := layerText(cx, "rom"); !strings.Contains(rom, "Use bind parameters.") {
		t.Fatalf("ROM %q, want the global library's pattern", rom)
	}
	// The projection's position: the files' checkpoints, as tokens.
	eventuallyWithin(t, 10*time.Second, "applied tokens and no lag", func() (bool, string) {
		_, body := healthz(t, n)
		applied, _ := body["applied"].(string)
		lag := gaugeOf(t, n, "agentmem_projection_lag")
		return applied != "" && lag == 0, fmt.Sprintf("applied %q, lag %v", applied, lag)
	})
}
