package inspector_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// uiNode is a real node (embedded NATS with JetStream, bbolt projection in
// t.TempDir()) with its HTTP listener on a random loopback port.
type uiNode struct {
	n    *node.Node
	nc   *nats.Conn
	c    *client.Client
	base string // http://127.0.0.1:port
}

func startNode(t testing.TB, mutate func(*node.Config)) *uiNode {
	t.Helper()
	n, nc := node.StartForTest(t, func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		if mutate != nil {
			mutate(c)
		}
	})
	return &uiNode{n: n, nc: nc, c: client.New(nc), base: "http://" + n.MetricsAddr()}
}

// session creates session id with a small budget (so compression happens
// within a few turns) and appends turns user/assistant pairs.
func (u *uiNode) session(t testing.TB, id, user, agent string, turns int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := u.c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: user, AgentId: agent,
		SystemPrompt: "You are the support agent of Acme. Answer briefly.", MaxContextTokens: 1200, ReservedOutputTokens: 200}); err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	u.appendTurns(t, id, 0, turns)
}

func (u *uiNode) appendTurns(t testing.TB, id string, from, turns int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for i := from; i < from+turns; i++ {
		_, err := u.c.AppendMessages(ctx, id,
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("Turn %d: my order A-%d arrived damaged, the blue kettle has a crack. Can you refund it to my Visa card?", i, 1000+i)},
			&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("I am sorry about order A-%d. I opened refund R-%d for 39.90 EUR to your Visa card; it arrives in 3 to 5 days.", 1000+i, 500+i)})
		if err != nil {
			t.Fatalf("append %s turn %d: %v", id, i, err)
		}
	}
}

// get fetches path with optional basic credentials and returns the status
// and the body.
func get(t testing.TB, base, path string, hdr map[string]string, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
