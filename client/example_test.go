package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

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
	// The duplicate carries the original reply: the ids the server assigned.
	fmt.Println(first.GetMessageIds(), again.GetMessageIds())
	// Another request under the same command id is refused, not dropped.
	other := &memoryv1.AppendRequest{CommandId: req.GetCommandId(), Messages: []*memoryv1.MessageInput{
		{Role: memoryv1.Role_ROLE_USER, Content: "something else"}}}
	_, err := c.Append(ctx, "s2", other)
	fmt.Println(client.Code(err))
	// Output:
	// false true true
	// [m1] [m1]
	// 409
}

func ExampleCode() {
	nc, stop := startNode()
	defer stop()
	_, err := client.New(nc).Context(context.Background(), "nobody")
	fmt.Println(client.Code(err), err)
	// Output: 404 agentmem: 404 session_id: session does not exist
}

// ExampleClient_ContextAs gets a context ready for the two common chat
// APIs: OpenAI-style messages (system first) and Anthropic-style system +
// messages (tool calls as tool_use blocks, results as tool_result blocks).
func ExampleClient_ContextAs() {
	nc, stop := startNode()
	defer stop()
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s3", &memoryv1.CreateSessionRequest{SystemPrompt: "You are a weather bot."}); err != nil {
		panic(err)
	}
	if _, err := c.AppendMessages(ctx, "s3",
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "Weather in Lisbon?"},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{
			{Id: "call_1", Name: "weather", Arguments: `{"city":"Lisbon"}`}}},
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: "call_1", Content: "sunny, 24 C"},
	); err != nil {
		panic(err)
	}
	openai, err := c.ContextAs(ctx, "s3", memoryv1.ContextFormat_CONTEXT_FORMAT_OPENAI)
	if err != nil {
		panic(err)
	}
	for _, m := range openai.GetRendered().GetOpenai() {
		fmt.Printf("openai: %s %q %d\n", m.GetRole(), m.GetContent(), len(m.GetToolCalls()))
	}
	anthropic, err := c.ContextAs(ctx, "s3", memoryv1.ContextFormat_CONTEXT_FORMAT_ANTHROPIC)
	if err != nil {
		panic(err)
	}
	fmt.Printf("anthropic system: %q\n", anthropic.GetRendered().GetSystem())
	for _, m := range anthropic.GetRendered().GetAnthropic() {
		for _, b := range m.GetContent() {
			fmt.Println("anthropic:", m.GetRole(), b.GetType(), b.GetText()+b.GetName()+b.GetContent())
		}
	}
	// Output:
	// openai: system "You are a weather bot.\n\nRecent tool result: weather (call call_1)" 0
	// openai: user "Weather in Lisbon?" 0
	// openai: assistant "" 1
	// openai: tool "sunny, 24 C" 0
	// anthropic system: "You are a weather bot.\n\nRecent tool result: weather (call call_1)"
	// anthropic: user text Weather in Lisbon?
	// anthropic: assistant tool_use weather
	// anthropic: user tool_result sunny, 24 C
}

// A session ends and its consolidation runs in the background: the
// terminate's reply names the entry written last, which shows the run
// finished. Wait for it, then read what the run wrote.
func ExampleClient_AwaitConsolidation() {
	nc, stop := startNode()
	defer stop()
	c := client.New(nc)
	ctx := context.Background()
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "ana", AgentId: "helper"}); err != nil {
		panic(err)
	}
	if _, err := c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "I'm allergic to peanuts."}); err != nil {
		panic(err)
	}
	st, err := c.SetStatus(ctx, "s1", memoryv1.StatusAction_STATUS_ACTION_TERMINATE, "done")
	if err != nil {
		panic(err)
	}
	m := st.GetConsolidation()
	fmt.Println(m.GetScope(), m.GetKey(), m.GetWatch())
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := c.AwaitConsolidation(wctx, m, 0); err != nil {
		panic(err)
	}
	e, err := c.GetEntry(ctx, client.User("ana"), "fact/user/allergy/peanuts", 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.GetMetadata()["fact_value"], e.GetMetadata()["agentmem.source_session"])
	// Output:
	// user:ana consolidated/s1 mem.v1.scope.user.ana.watch
	// peanuts s1
}
