package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// startNode runs a node with an embedded NATS in a temporary directory, as
// `go run ./cmd/node` would, and returns a connection and a stop function.
func startNode() (*nats.Conn, func()) {
	dir, err := os.MkdirTemp("", "agentmem-example")
	if err != nil {
		panic(err)
	}
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.NATSListen, cfg.HTTPAddr = dir, "127.0.0.1:-1", ""
	n, err := node.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		panic(err)
	}
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		panic(err)
	}
	return nc, func() {
		nc.Close()
		_ = n.Shutdown(context.Background())
		_ = os.RemoveAll(dir)
	}
}

func Example() {
	nc, stop := startNode()
	defer stop()
	c := client.New(nc)
	ctx := context.Background()

	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{
		UserId: "u1", SystemPrompt: "You are a helpful assistant.", MaxContextTokens: 8000,
	}); err != nil {
		panic(err)
	}
	rep, err := c.AppendMessages(ctx, "s1",
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "What is our churn rate?"})
	if err != nil {
		panic(err)
	}
	fmt.Println("version", rep.GetResult().GetVersion(), "tokens", rep.GetTokens())

	cx, err := c.Context(ctx, "s1")
	if err != nil {
		panic(err)
	}
	for _, m := range cx.GetMessages() {
		fmt.Println(m.GetLayer(), m.GetRole(), m.GetContent())
	}
	fmt.Printf("used %d of %d tokens\n", cx.GetUsage().GetUsed(), cx.GetUsage().GetBudget())
	// Output:
	// version 2 tokens [10]
	// rom ROLE_SYSTEM You are a helpful assistant.
	// l1 ROLE_USER What is our churn rate?
	// used 20 of 3904 tokens
}

func ExampleClient_Append_retry() {
	nc, stop := startNode()
	defer stop()
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s2", nil); err != nil {
		panic(err)
	}
	req := &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
		{Role: memoryv1.Role_ROLE_USER, Content: "remember: the deploy key rotates on Fridays"}}}
	first, _ := c.Append(ctx, "s2", req)
	// After a timeout the outcome is unknown: send the same request again.
	again, _ := c.Append(ctx, "s2", req)
	fmt.Println(first.GetResult().GetDuplicate(), again.GetResult().GetDuplicate(), first.GetResult().GetSeq() == again.GetResult().GetSeq())
	// Output: false true true
}

func ExampleCode() {
	nc, stop := startNode()
	defer stop()
	_, err := client.New(nc).Context(context.Background(), "nobody")
	fmt.Println(client.Code(err), err)
	// Output: 404 agentmem: 404 session_id: session does not exist
}
