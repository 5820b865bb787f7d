package events

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// ObjectStore.Put (the compaction tests' object store) can leave
		// resetPendingAcksOnReconnect blocked on a nil channel: nats.go
		// clears the channel before the goroutine it started reads it.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
	)
}
