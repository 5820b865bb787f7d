package projections

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// runProjector starts p.Run and returns a stop function that cancels it and
// returns its error.
func runProjector(t *testing.T, p *Projector) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var err error
	stopped := false
	stop := func() error {
		if !stopped {
			cancel()
			err = <-done
			stopped = true
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, mod := range []func(*Config){
		func(c *Config) { c.Stream = "a.b" },
		func(c *Config) { c.BatchEvents = 0 },
		func(c *Config) { c.BatchBytes = 0 },
		func(c *Config) { c.BatchWait = 0 },
		func(c *Config) { c.BatchApply = -time.Millisecond },
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
}

func TestProjectorReadYourWrites(t *testing.T) {
	js, log := testJS(t)
	store := openTestStore(t)
	p, err := NewProjector(Config{}, js, store, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Not running yet: WaitFor times out with ErrNotCaughtUp.
	l := newLogBuilder(t)
	l.create("s1", "u1", "")
	l.appendMsgs("s1", "remember the blue door")
	last := publish(t, log, l.recs)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err = p.WaitFor(ctx, last)
	cancel()
	if !errors.Is(err, ErrNotCaughtUp) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor before Run = %v", err)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer lcancel()
	if lag, err := p.Lag(lctx); err != nil || lag != last {
		t.Fatalf("Lag = %d, %v; want %d", lag, err, last)
	}

	stop := runProjector(t, p)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := p.WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	msgs, total, err := store.Recall("s1", 0, 0)
	if err != nil || total != 1 || msgs[0].GetContent() != "remember the blue door" {
		t.Fatalf("Recall after WaitFor = %v, %d, %v", msgs, total, err)
	}

	// A write while running: read your own write.
	b := l.appendMsgs("s1", "and the red key")
	data, _ := events.EncodeBatch(b)
	res, err := log.Append(wctx, events.SessionSubject("s1"), last, b.CommandId, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(wctx, res.Seq); err != nil {
		t.Fatal(err)
	}
	if hits, err := store.Search("s1", memoryv1.SearchScope_SEARCH_SCOPE_SESSION, "red key", 0); err != nil || len(hits) != 1 {
		t.Fatalf("Search after WaitFor = %v, %v", hits, err)
	}
	if lag, err := p.Lag(wctx); err != nil || lag != 0 {
		t.Fatalf("Lag = %d, %v", lag, err)
	}
	// A sequence never written: times out.
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer scancel()
	if err := p.WaitFor(sctx, res.Seq+100); !errors.Is(err, ErrNotCaughtUp) {
		t.Fatalf("WaitFor(future) = %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}

	// A new projector resumes from the checkpoint.
	p2, err := NewProjector(Config{}, js, store, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p2.AppliedSeq() != res.Seq {
		t.Fatalf("resumed AppliedSeq = %d, want %d", p2.AppliedSeq(), res.Seq)
	}
}

func TestProjectorStopsOnUndecodableRecord(t *testing.T) {
	js, log := testJS(t)
	l := newLogBuilder(t)
	l.create("x", "u1", "")
	last := publish(t, log, l.recs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := js.Publish(ctx, "mem.ev.session.x", []byte("\xff\xffgarbage"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Sequence != last+1 {
		t.Fatalf("garbage at %d", ack.Sequence)
	}
	store := openTestStore(t)
	p, err := NewProjector(Config{}, js, store, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(ctx)
	var ae *ApplyError
	if !errors.As(err, &ae) || ae.Seq != ack.Sequence || ae.Stream != events.StreamName || !errors.Is(err, events.ErrMalformed) {
		t.Fatalf("Run = %v, want an ApplyError at sequence %d", err, ack.Sequence)
	}
	if !strings.Contains(err.Error(), "sequence 2") {
		t.Fatalf("error does not name the sequence: %v", err)
	}
	if store.AppliedSeq() != last {
		t.Fatalf("AppliedSeq = %d, want %d (the good record only)", store.AppliedSeq(), last)
	}
	// Run again: it stops at the same record, never skipping it.
	if err := p.Run(ctx); !errors.As(err, &ae) || ae.Seq != ack.Sequence {
		t.Fatalf("second Run = %v", err)
	}
}

func TestRebuildMatchesLive(t *testing.T) {
	js, log := testJS(t)
	l := newLogBuilder(t)
	goldenCases[2].build(l) // two users, and a non-session record (not published)
	l.add("s2", &memoryv1.SessionStatusChanged{From: memoryv1.SessionStatus_SESSION_STATUS_CREATED, To: memoryv1.SessionStatus_SESSION_STATUS_ACTIVE})
	for i := 0; i < 20; i++ {
		l.appendMsgs("s1", "more about the timeout", "and the fix")
	}
	last := publish(t, log, l.recs)

	live := openTestStore(t)
	p, err := NewProjector(Config{BatchEvents: 2}, js, live, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runProjector(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	path := live.Path() + ".copy"
	// A leftover from an interrupted run is replaced.
	if err := writeFile(path+".rebuild", "junk"); err != nil {
		t.Fatal(err)
	}
	var calls int
	stats, err := Rebuild(ctx, js, events.StreamName, path, testCodec, func(applied, total uint64) {
		calls++
		if total != last || applied > total {
			t.Errorf("progress(%d, %d)", applied, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Events != last || stats.LastSeq != last || calls == 0 {
		t.Fatalf("stats = %+v, progress calls %d", stats, calls)
	}
	rebuilt, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	ld, _ := live.Digest()
	rd, _ := rebuilt.Digest()
	if diff := VerifyDigests(ld, rd); diff != nil {
		t.Fatalf("rebuilt differs: %v", diff)
	}
	if fileExists(path + ".rebuild") {
		t.Fatal(".rebuild file left behind")
	}
	if diff := VerifyDigests(map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1", "c": "3"}); len(diff) != 2 {
		t.Fatalf("VerifyDigests = %v", diff)
	}
}
