package node_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestEraseOnACluster: on three nodes of an R3 cluster, a session erased
// through a node that does not serve it is unreadable through every node,
// as are an erased entry and an erased agent's memory and, last, its user;
// replay verify passes on the cluster's log against each node's
// projection.
func TestEraseOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers, three nodes")
	}
	_, urls := startCluster(t)
	nodes := startClusterNodes(t, urls)
	var clients []*client.Client
	for i := range urls {
		nc, err := nats.Connect(urls[i], nats.MaxReconnects(-1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		clients = append(clients, client.New(nc))
	}
	waitSettled(t, nodes...)
	ctx := context.Background()
	// A session some node other than node 0 serves.
	var sid string
	for i := 0; sid == ""; i++ {
		id := fmt.Sprintf("cs%d", i)
		if !nodes[0].Serves(id) {
			sid = id
		}
	}
	for _, id := range []string{sid, "keep"} {
		user := "cu1"
		if id == "keep" {
			user = "cu2"
		}
		if _, err := clients[1].CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user}); err != nil {
			t.Fatal(err)
		}
		if _, err := clients[2].AppendMessages(ctx, id, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "the ocelot marker of " + id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := clients[2].Put(ctx, client.User("cu1"), &memoryv1.PutEntryRequest{Key: "pet", Value: []byte("ocelot")}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[0].EraseSession(ctx, sid, "cluster"); err != nil {
		t.Fatalf("erase %s through node 0: %v", sid, err)
	}
	written := max(clients[1].LastWriteSeq(), clients[2].LastWriteSeq())
	for i, c := range clients {
		if _, err := c.Context(ctx, sid); client.Code(err) != 404 {
			t.Errorf("context of %s through node %d: %v, want 404", sid, i, err)
		}
		if _, err := c.Recall(ctx, sid, nil); client.Code(err) != 404 {
			t.Errorf("recall of %s through node %d: %v, want 404", sid, i, err)
		}
		rep, err := c.Search(ctx, "keep", &memoryv1.SearchRequest{Query: "ocelot marker", Scope: memoryv1.SearchScope_SEARCH_SCOPE_SESSION, MinSeq: written})
		if err != nil || len(rep.GetHits()) != 1 {
			t.Errorf("search of keep through node %d: %v %v", i, rep, err)
		}
	}
	// An entry and an agent's memory, erased through one node, read through each.
	for _, k := range []string{"gone", "kept"} {
		if _, err := clients[2].Put(ctx, client.Project("cp"), &memoryv1.PutEntryRequest{Key: k, Value: []byte("ocelot " + k)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := clients[2].Put(ctx, client.Agent("cag"), &memoryv1.PutEntryRequest{Key: "lesson", Value: []byte("ocelot lesson")}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[0].EraseEntry(ctx, client.Project("cp"), "gone", "cluster"); err != nil {
		t.Fatalf("erase entry through node 0: %v", err)
	}
	if _, err := clients[1].EraseScope(ctx, client.Agent("cag"), "cluster"); err != nil {
		t.Fatalf("erase agent through node 1: %v", err)
	}
	for i, c := range clients {
		if _, err := c.GetEntry(ctx, client.Project("cp"), "gone", 0); client.Code(err) != 404 {
			t.Errorf("erased entry through node %d: %v, want 404", i, err)
		}
		if _, err := c.GetEntry(ctx, client.Project("cp"), "kept", 0); err != nil {
			t.Errorf("kept entry through node %d: %v", i, err)
		}
		if _, err := c.GetEntry(ctx, client.Agent("cag"), "lesson", 0); client.Code(err) != 404 {
			t.Errorf("erased agent's entry through node %d: %v, want 404", i, err)
		}
	}
	if _, err := clients[1].EraseUser(ctx, "cu1", "cluster"); err != nil {
		t.Fatalf("erase cu1: %v", err)
	}
	for i, c := range clients {
		if _, err := c.GetEntry(ctx, client.User("cu1"), "pet", 0); client.Code(err) != 404 {
			t.Errorf("cu1's entry through node %d: %v, want 404", i, err)
		}
	}
	last := clients[1].LastWriteSeq()
	var dirs []string
	for _, n := range nodes {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		if err := n.WaitProjected(wctx, last); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, n.DataDirForTest())
		if err := n.Shutdown(wctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	for i, dir := range dirs {
		var out bytes.Buffer
		if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{NATSURL: strings.Join(urls, ",")},
			Projection: filepath.Join(dir, node.ProjectionFile)}, &out); err != nil {
			t.Fatalf("replay verify of node %d's projection after the erasures: %v\n%s", i, err, out.String())
		}
	}
}
