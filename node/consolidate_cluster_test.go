package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// ownerOf is the index of the node serving id.
func ownerOf(t *testing.T, nodes []*node.Node, id string) int {
	t.Helper()
	for i, n := range nodes {
		if n.Serves(id) {
			return i
		}
	}
	t.Fatalf("no node serves %s", id)
	return -1
}

// TestConsolidateOnACluster: on a three-node cluster, consolidating a
// session whose user's scope another node serves reads that scope's
// configuration from its owner and writes the fact there (it answered 503:
// the read of the configuration could not be carried to another node).
func TestConsolidateOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three servers, three nodes")
	}
	_, urls := startCluster(t)
	nodes := startClusterNodes(t, urls)
	waitSettled(t, nodes...)
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c := client.New(nc).WithTimeout(30 * time.Second)
	ctx := context.Background()
	// A session and a user served by different nodes.
	sid, user := "cs", ""
	for i := 0; user == ""; i++ {
		if u := fmt.Sprintf("cu%d", i); ownerOf(t, nodes, u) != ownerOf(t, nodes, sid) {
			user = u
		}
	}
	if _, err := c.CreateSession(ctx, sid, &memoryv1.CreateSessionRequest{UserId: user}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, sid, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "I live in Oslo."}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Consolidate(ctx, sid, false)
	if err != nil || len(rep.GetFacts()) != 1 || rep.GetFacts()[0].GetOutcome() != "written" {
		t.Fatalf("consolidate %s (served by n%d, user:%s by n%d): %v %v", sid, ownerOf(t, nodes, sid), user, ownerOf(t, nodes, user), err, rep)
	}
	e, err := c.GetEntry(ctx, client.User(user), "fact/user/home_city", 0)
	if err != nil || e.GetMetadata()["fact_value"] != "Oslo" {
		t.Fatalf("the fact in user:%s: %v %v", user, err, e)
	}
}
