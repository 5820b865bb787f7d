package largedata

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Upstream race in nats.go v1.55 jetstream: ObjectStore.Put makes a
		// private JetStream context whose async publisher starts
		// resetPendingAcksOnReconnect; the deferred cleanupReplySub can set
		// publisher.connStatusCh to nil before that goroutine reads it, and
		// it then blocks forever on a nil channel. It is not ours to stop
		// (about 1 in 50 Puts here); see the package report.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
	)
}
