package node

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// erasingLog is the log of an embedded JetStream server on which an erase
// runs while the health check looks: the first time the check lists the
// missing sequences, meanwhile is called first.
type erasingLog struct {
	*events.JetStreamLog
	meanwhile func()
}

func (l *erasingLog) MissingSeqs(ctx context.Context, limit int) ([]uint64, bool, error) {
	if f := l.meanwhile; f != nil {
		l.meanwhile = nil
		f()
	}
	return l.JetStreamLog.MissingSeqs(ctx, limit)
}

// jetStreamLogForTest starts an embedded server and returns the log on it
// (one replica, deletes allowed), and the stream.
func jetStreamLogForTest(t *testing.T) (*events.JetStreamLog, jetstream.Stream) {
	t.Helper()
	cfg := natsembed.DefaultConfig()
	cfg.DataDir, cfg.Listen = filepath.Join(t.TempDir(), "js"), "127.0.0.1:-1"
	s, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	lcfg := events.DefaultJetStreamConfig()
	lcfg.DenyPurge, lcfg.AllowDelete = false, true
	l, err := events.NewJetStreamLog(context.Background(), js, lcfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	return l, st
}

// eraseSubject records the removal of subject's messages in the ledger,
// then removes them, as an aggregate's erase does.
func eraseSubject(t *testing.T, l *events.JetStreamLog, id, subject string) {
	t.Helper()
	ctx := context.Background()
	seqs, err := events.SubjectSeqs(ctx, l, subject)
	if err != nil {
		t.Fatal(err)
	}
	rm := &memoryv1.LogRemoval{Id: id, Subjects: []string{subject}, Removed: events.RemovalSpans(events.Spans(seqs))}
	at, err := events.AppendRemoval(ctx, l, events.NewCodec(), rm, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveSubject(ctx, subject, at); err != nil {
		t.Fatal(err)
	}
}

// TestLogHealthEraseWhileChecking: an erase whose removal is recorded
// after the check read the stream's bounds, and whose purge lands before
// the check lists the missing sequences (a node resuming a user erase
// while its first check runs), is no loss: the check reads the ledger up
// to where the stream ended once it listed them.
func TestLogHealthEraseWhileChecking(t *testing.T) {
	jl, st := jetStreamLogForTest(t)
	ctx := context.Background()
	for i, subj := range []string{"mem.ev.user.keeper", "mem.ev.session.a", "mem.ev.agent.b", "mem.ev.session.a", "mem.ev.agent.b"} {
		last, err := jl.LastSeq(ctx, subj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jl.Append(ctx, subj, last, fmt.Sprintf("m%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	l := &erasingLog{JetStreamLog: jl}
	h := newLogHealth(l, events.StreamName, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if got := h.observe(ctx); got != "" {
		t.Fatalf("a growing log: %q", got)
	}
	// One item of the erase is done (sequences 2, 4 gone), the next one
	// (sequences 3, 5) goes while the check looks.
	eraseSubject(t, jl, "rm-a", "mem.ev.session.a")
	l.meanwhile = func() { eraseSubject(t, jl, "rm-b", "mem.ev.agent.b") }
	if got := h.observe(ctx); got != "" {
		t.Fatalf("after an erase that ran while the check looked: %q", got)
	}
	if l.meanwhile != nil {
		t.Fatal("the check did not list the missing sequences (the test could not fail)")
	}
	// A message gone without a removal is still a loss.
	if err := st.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := h.observe(ctx), "lost 1 message the removal ledger does not list (sequence 1)"; !strings.Contains(got, want) {
		t.Fatalf("after a delete outside the ledger: %q, want %q", got, want)
	}
}
