package api_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Upstream race in nats.go v1.55 jetstream (see largedata/main_test.go):
		// ObjectStore.Put can leave resetPendingAcksOnReconnect blocked on a
		// nil channel. Large-data puts here go through it.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
	)
}
