package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// A session writes a snapshot every SnapshotEvery batches, not only its
// first one: a background snapshot that finished lets the next one go.
func TestSnapshotsKeepComing(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	h := newHarness(t, nc, func(c *Config) { c.SnapshotEvery = 2 })
	h.must(t, "s1", &memoryv1.CreateSessionRequest{})
	version := func() uint64 {
		data, ok, err := h.snaps.Get(context.Background(), "session.s1")
		if err != nil || !ok {
			return 0
		}
		snap := &memoryv1.SessionSnapshot{}
		if err := proto.Unmarshal(data, snap); err != nil {
			t.Fatal(err)
		}
		return snap.GetVersion()
	}
	for i := range 12 {
		h.must(t, "s1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg(fmt.Sprint("message ", i))}})
		time.Sleep(20 * time.Millisecond) // the background put finishes between commands
	}
	deadline := time.Now().Add(5 * time.Second)
	for version() < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if v := version(); v < 10 {
		t.Fatalf("snapshot at version %d after 13 commands with a snapshot every 2, want >= 10", v)
	}
}
