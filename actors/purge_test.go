package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/internal/segmented"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPurgedAggregateUnavailable purges one session's subject (on a stream
// without deny_purge, as an old stream the server refused to update) under
// a live actor with snapshots: it, its restarted self and another node
// recovering from the snapshot answer ErrUnavailable naming the lost
// sequence, never a 409 conflict, and log an error; another session keeps
// working.
func TestPurgedAggregateUnavailable(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	lcfg := events.DefaultJetStreamConfig()
	lcfg.DenyPurge = false
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	a := newHarnessOn(t, nc, lcfg, logger, func(c *Config) { c.SnapshotEvery = 1 })
	for _, id := range []string{"p1", "p2"} {
		a.must(t, id, &memoryv1.CreateSessionRequest{})
		for range 3 {
			a.must(t, id, &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("hello " + id)}})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for { // a snapshot exists (the put runs beside the actor)
		if _, ok, err := a.snaps.Get(ctx, "session.p1"); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(events.SessionSubject("p1"))); err != nil {
		t.Fatal(err)
	}

	unavailable := func(h *harness, what string, body proto.Message, held uint64) {
		t.Helper()
		_, err := h.call(t, "p1", body)
		var rej *segmented.Rejection
		if errors.As(err, &rej) || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), fmt.Sprintf("no longer holds its last sequence %d ", held)) {
			t.Fatalf("%s after the purge: %v, want ErrUnavailable naming the lost sequence", what, err)
		}
	}
	appendReq := func() proto.Message {
		return &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("after the purge")}}
	}
	// The live actor: its append conflicts, the reload finds the subject empty.
	// p1 was written first: its last sequence is 4. The live actor's append
	// conflicts and the reload finds the subject empty; the state it held
	// becomes the snapshot (if the last one was older).
	unavailable(a, "append on the live actor", appendReq(), 4)
	// Restarted by its supervisor, it recovers from the snapshot: still refused.
	unavailable(a, "second append", appendReq(), 4)
	unavailable(a, "read", &memoryv1.GetSessionRequest{}, 4)
	// Another node activating p1 from the snapshot.
	b := newHarnessOn(t, nc, lcfg, logger, nil)
	unavailable(b, "read on another node", &memoryv1.GetSessionRequest{}, 4)
	unavailable(b, "append on another node", appendReq(), 4)

	if s := logs.String(); !strings.Contains(s, "level=ERROR") || !strings.Contains(s, "subject=mem.ev.session.p1") || !strings.Contains(s, "held_seq=4") {
		t.Fatalf("no error logged for p1:\n%s", s)
	}
	// Nothing was stored on p1, and p2 is untouched.
	if last, err := a.log.LastSeq(ctx, events.SessionSubject("p1")); err != nil || last != 0 {
		t.Fatalf("p1's last sequence after the refusals = %d, %v; want 0", last, err)
	}
	a.must(t, "p2", appendReq())
	b.must(t, "p2", appendReq())
}

// TestPurgedAggregateWithoutSnapshot: a live aggregate that never wrote a
// snapshot is purged. The reload that finds the subject empty keeps the live
// state as the snapshot, so the restarted actor and another node refuse it
// too, instead of recovering it as a new, empty aggregate.
func TestPurgedAggregateWithoutSnapshot(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	lcfg := events.DefaultJetStreamConfig()
	lcfg.DenyPurge = false
	logger := slog.New(slog.DiscardHandler)
	a := newHarnessOn(t, nc, lcfg, logger, func(c *Config) { c.SnapshotEvery = 1000 })
	a.must(t, "q1", &memoryv1.CreateSessionRequest{})
	a.must(t, "q1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("hello")}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, ok, err := a.snaps.Get(ctx, "session.q1"); err != nil || ok {
		t.Fatalf("snapshot before the purge: %v %v, want none", ok, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(events.SessionSubject("q1"))); err != nil {
		t.Fatal(err)
	}
	b := newHarnessOn(t, nc, lcfg, logger, nil)
	for i, h := range []*harness{a, a, b} {
		_, err := h.call(t, "q1", &memoryv1.AppendRequest{Messages: []*memoryv1.MessageInput{userMsg("after the purge")}})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no longer holds its last sequence 2 ") {
			t.Fatalf("append %d after the purge: %v, want ErrUnavailable naming sequence 2", i, err)
		}
	}
}
