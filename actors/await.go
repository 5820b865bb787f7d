package actors

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// ErrNoAnswer is returned by Await when its context ends before the actor
// answers. It does not say the command failed: the actor may still carry
// it out (retry with the same command id, or removal id).
var ErrNoAnswer = errors.New("actors: timed out waiting for the actor")

// Await sends one command with dispatch and waits for the actor's answer
// until ctx ends (then an error wrapping ErrNoAnswer and ctx.Err()). An
// error of dispatch itself (the command was not sent) is returned as is.
func Await(ctx context.Context, dispatch func(ReplyFunc) error) (proto.Message, error) {
	type answer struct {
		m   proto.Message
		err error
	}
	ch := make(chan answer, 1) // the reply never blocks, answered after Await returned or not
	if err := dispatch(func(m proto.Message, err error) { ch <- answer{m, err} }); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a.m, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrNoAnswer, ctx.Err())
	}
}
