package actors

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// protoactor's dead-letter throttle starts a goroutine when a message
		// reaches a stopped actor (a rewrite finishing after its session
		// passivated); it waits one throttle period (1s) and returns on its
		// own, but may outlive the last test by that much.
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}
