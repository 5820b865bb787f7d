package natsembed

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// StartForTest starts a silent server with JetStream on a random loopback
// port, storing under t.TempDir(), and connects to it. Cleanup (close the
// connection, then shut the server down) is registered with t.Cleanup.
func StartForTest(t testing.TB) (*Server, *nats.Conn) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:-1"
	s, err := Start(cfg)
	if err != nil {
		t.Fatalf("natsembed: start: %v", err)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		s.Shutdown()
		t.Fatalf("natsembed: connect: %v", err)
	}
	t.Cleanup(func() {
		nc.Close()
		s.Shutdown()
	})
	return s, nc
}
