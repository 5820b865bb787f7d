package segmented_test

import (
	"fmt"

	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// The actor's loop: validate and decide (pure), store the events, apply.
func ExampleState() {
	tok, err := segmented.NewTokenizer()
	if err != nil {
		panic(err)
	}
	env := segmented.Env{NowUnixNano: 1, Tokenizer: tok}
	s := segmented.New()

	evs, err := s.DecideCreate(&memoryv1.CreateSessionRequest{SystemPrompt: "You are terse."}, "demo", env)
	if err != nil {
		panic(err)
	}
	// ... append evs to the log as one batch, then:
	if err := s.Apply(segmented.Meta{CommandID: "c1", Version: 1, Seq: 1}, evs); err != nil {
		panic(err)
	}

	evs, err = s.DecideAppend(&memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{
		{Role: memoryv1.Role_ROLE_USER, Content: "hello world"},
	}}, env)
	if err != nil {
		panic(err)
	}
	if err := s.Apply(segmented.Meta{CommandID: "c2", Version: 2, Seq: 2}, evs); err != nil {
		panic(err)
	}
	ctx := s.Context()
	for _, m := range ctx.Messages {
		fmt.Println(m.Layer, m.Role, m.Content, m.Tokens)
	}
	fmt.Println(s.Status(), ctx.Usage.Used, "of", ctx.Usage.Budget)

	_, err = s.DecideStatus(&memoryv1.StatusRequest{Action: memoryv1.StatusAction_STATUS_ACTION_ARCHIVE})
	fmt.Println(err)
	// Output:
	// rom ROLE_SYSTEM You are terse. 8
	// l1 ROLE_USER hello world 6
	// SESSION_STATUS_ACTIVE 14 of 123904
	// action: invalid transition from ACTIVE to ARCHIVED
}
