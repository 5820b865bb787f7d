package actors

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
)

// slowSnapshots delays every Put after slow is set.
type slowSnapshots struct {
	events.SnapshotStore
	slow *atomic.Bool
}

func (s slowSnapshots) Put(ctx context.Context, key string, data []byte) error {
	if s.slow.Load() {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return s.SnapshotStore.Put(ctx, key, data)
}

// An actor that passivated (it left the directory) still serves what was
// queued before its poison pill; a snapshot it starts in the background
// meanwhile must not race Close's wait for the background work (a
// WaitGroup's Add from zero concurrent with its Wait). Under -race this
// failed before the background work was registered under a lock.
func TestCloseWhileAPassivatedActorSnapshots(t *testing.T) {
	for range 8 { // the race detector saw it in about one run of three
		_, nc := natsembed.StartForTest(t)
		closeWhilePassivatedSnapshots(t, nc)
	}
}

func closeWhilePassivatedSnapshots(t *testing.T, nc *nats.Conn) {
	var slow atomic.Bool
	h := newHarnessDeps(t, nc, events.DefaultJetStreamConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)),
		func(c *Config) { c.SnapshotEvery = 1 },
		func(d *Deps) { d.Snapshots = slowSnapshots{SnapshotStore: d.Snapshots, slow: &slow} })
	h.must(t, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"})
	slow.Store(true)
	// The passivation is queued first, the appends behind it: the actor
	// leaves the directory, then serves them (each snapshots, in the
	// background: SnapshotEvery 1), then stops.
	h.dir.mu.Lock()
	pid := h.dir.pids[sessionKey("s1")]
	h.dir.mu.Unlock()
	var passivated sync.WaitGroup // not waited for: no synchronisation with the actor
	passivated.Add(1)
	h.dir.root.Send(pid, &passivate{done: &passivated})
	for i := range 3 {
		h.dir.root.Send(pid, &request{body: &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "queued " + string(rune('a'+i))}}},
			reply: func(proto.Message, error) {}})
	}
	// No synchronisation with the actor on purpose: Close must order
	// itself after the actor's background work by itself.
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.dir.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
