package projections

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Environment of the crash test's child process.
const (
	envChildURL   = "PROJECTIONS_CHILD_NATS_URL"
	envChildDB    = "PROJECTIONS_CHILD_DB"
	envChildUntil = "PROJECTIONS_CHILD_UNTIL"
)

// TestProjectorChild is the child process of TestProjectorCrash: it runs a
// projector on the file and reports "start <checkpoint>" then "applied
// <seq>" after each commit, until killed or, with envChildUntil, until it
// applied that sequence.
func TestProjectorChild(t *testing.T) {
	url := os.Getenv(envChildURL)
	if url == "" {
		t.Skip("child of TestProjectorCrash only")
	}
	until, _ := strconv.ParseUint(os.Getenv(envChildUntil), 10, 64)
	nc, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := Open(os.Getenv(envChildDB))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, err := NewProjector(Config{BatchEvents: 37, BatchWait: 2 * time.Millisecond}, js, store, events.NewCodec(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CHILD start %d\n", p.AppliedSeq())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	if until > 0 && p.AppliedSeq() >= until {
		cancel()
	}
	for seq := p.AppliedSeq() + 1; ; seq = p.AppliedSeq() + 1 {
		if err := p.WaitFor(ctx, seq); err != nil {
			break
		}
		a := p.AppliedSeq()
		fmt.Printf("CHILD applied %d\n", a)
		if until > 0 && a >= until {
			cancel()
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// child is one run of the child process.
type child struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	// start is the checkpoint the child started from; applied the last
	// commit it reported.
	start, applied uint64
	started        chan struct{}
	exited         chan struct{}
}

func startChild(t *testing.T, url, db string, until uint64) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProjectorChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChildURL+"="+url, envChildDB+"="+db, envChildUntil+"="+strconv.FormatUint(until, 10))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, started: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(c.exited)
		sc := bufio.NewScanner(out)
		startedOnce := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "CHILD" {
				continue
			}
			n, _ := strconv.ParseUint(f[2], 10, 64)
			c.mu.Lock()
			switch f[1] {
			case "start":
				c.start, c.applied = n, n
				if !startedOnce {
					startedOnce = true
					close(c.started)
				}
			case "applied":
				if n < c.applied {
					t.Errorf("child reported applied %d after %d", n, c.applied)
				}
				c.applied = n
			}
			c.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return c
}

func (c *child) reported() (start, applied uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start, c.applied
}

// TestProjectorCrash kills the projector process with SIGKILL at random
// points while it applies a growing log, restarts it, and checks the named
// guarantees: resumable (each restart starts from a checkpoint at least the
// last commit reported before the kill), no gap, no duplicate, in order
// (every session's swap holds exactly messages 1..n with their contents),
// and the final file equals a clean Rebuild (Digest).
func TestProjectorCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: not in -short")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	dir := t.TempDir()
	cfg := natsembed.DefaultConfig()
	cfg.DataDir = filepath.Join(dir, "nats")
	cfg.Listen = "127.0.0.1:-1"
	srv, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log, err := events.NewJetStreamLog(ctx, js, events.DefaultJetStreamConfig())
	if err != nil {
		t.Fatal(err)
	}

	// The log: sessions created then appended to, round robin.
	const sessions, batches = 25, 3000
	l := newLogBuilder(t)
	for i := 0; i < batches; i++ {
		sid := fmt.Sprintf("crash-%02d", i%sessions)
		if i < sessions {
			l.create(sid, fmt.Sprintf("user-%d", i%3), "")
			continue
		}
		texts := make([]string, 1+rng.IntN(3))
		for j := range texts {
			texts[j] = crashContent(sid, l.msgSeq[sid]+uint64(j)+1)
		}
		l.appendMsgs(sid, texts...)
	}
	var (
		appendErr  error
		lastSeq    uint64
		appendDone = make(chan struct{})
	)
	appendRng := rand.New(rand.NewPCG(seed, 2)) // the appender's own: rand.Rand is not safe for concurrent use
	go func() {
		defer close(appendDone)
		lastBySubj := map[string]uint64{}
		for _, r := range l.recs {
			data, err := events.EncodeBatch(r.Batch)
			if err != nil {
				appendErr = err
				return
			}
			res, err := log.Append(ctx, r.Subject, lastBySubj[r.Subject], r.Batch.CommandId, data)
			if err != nil {
				appendErr = err
				return
			}
			lastBySubj[r.Subject] = res.Seq
			lastSeq = res.Seq
			if appendRng.IntN(50) == 0 {
				time.Sleep(time.Millisecond) // let the projector catch up now and then
			}
		}
	}()

	db := filepath.Join(dir, "proj.db")
	var prevApplied uint64
	kills := 3 + rng.IntN(3)
	for k := 0; k < kills; k++ {
		c := startChild(t, srv.ClientURL(), db, 0)
		select {
		case <-c.started:
		case <-time.After(30 * time.Second):
			t.Fatal("child did not start")
		}
		start, _ := c.reported()
		if start < prevApplied {
			t.Fatalf("restart %d: checkpoint %d is before the last reported commit %d", k, start, prevApplied)
		}
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-c.exited
		_ = c.cmd.Wait()
		_, prevApplied = c.reported()
		t.Logf("kill %d: started at %d, killed after reporting %d", k+1, start, prevApplied)
	}
	<-appendDone
	if appendErr != nil {
		t.Fatal(appendErr)
	}

	// Final run up to the last sequence.
	c := startChild(t, srv.ClientURL(), db, lastSeq)
	<-c.exited
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("final child: %v", err)
	}
	if start, applied := c.reported(); start < prevApplied || applied != lastSeq {
		t.Fatalf("final child started at %d (last reported %d), applied %d of %d", start, prevApplied, applied, lastSeq)
	}

	store, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if store.AppliedSeq() != lastSeq {
		t.Fatalf("checkpoint %d, want %d", store.AppliedSeq(), lastSeq)
	}
	// No gap, no duplicate, in order.
	for i := 0; i < sessions; i++ {
		sid := fmt.Sprintf("crash-%02d", i)
		want := l.msgSeq[sid]
		var got uint64
		for {
			msgs, total, err := store.Recall(sid, int(got), MaxRecallLimit)
			if err != nil {
				t.Fatal(err)
			}
			if total != want {
				t.Fatalf("%s: total %d, want %d", sid, total, want)
			}
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				got++
				if m.GetSeq() != got || m.GetContent() != crashContent(sid, got) {
					t.Fatalf("%s: message %d is seq %d %q", sid, got, m.GetSeq(), m.GetContent())
				}
			}
		}
		if got != want {
			t.Fatalf("%s: %d messages in swap, want %d", sid, got, want)
		}
	}
	// Same read model as a clean rebuild.
	rebuilt := filepath.Join(dir, "rebuilt.db")
	if _, err := Rebuild(ctx, js, events.StreamName, rebuilt, events.NewCodec(), nil); err != nil {
		t.Fatal(err)
	}
	rs, err := Open(rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	ld, _ := store.Digest()
	rd, _ := rs.Digest()
	if diff := VerifyDigests(ld, rd); diff != nil {
		t.Fatalf("crashed-and-resumed file differs from a rebuild: %v", diff)
	}
	if h, _ := store.Search("crash-00", memoryv1.SearchScope_SEARCH_SCOPE_USER, "message 7", 3); len(h) == 0 {
		t.Fatal("search finds nothing")
	}
}

func crashContent(sid string, n uint64) string {
	return fmt.Sprintf("%s message %d about topic%d", sid, n, n%17)
}
