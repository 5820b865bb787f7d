// Command tour is the README's two-minute tour: with a node running
// (go run ./cmd/node), go run ./examples/tour.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func main() {
	nc, err := nats.Connect("nats://127.0.0.1:4222")
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	c := client.New(nc)
	ctx := context.Background()
	_, err = c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{
		UserId: "u1", SystemPrompt: "You are a helpful assistant.", MaxContextTokens: 8000,
	})
	if err != nil && client.Code(err) != 409 { // 409: it exists (a second run)
		log.Fatal(err)
	}
	_, err = c.AppendMessages(ctx, "s1",
		&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "What is our churn rate?"})
	if err != nil {
		log.Fatal(err)
	}
	cx, err := c.Context(ctx, "s1") // the messages to send to the LLM, layer by layer, with token counts
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range cx.Messages {
		fmt.Println(m.Layer, m.Role, m.Content)
	}
}
