package replay

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
)

var fixtureRoot string // removed by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "replay-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureRoot = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		// ObjectStore.Put (compact_test.go) can leave this nats.go goroutine
		// blocked on a nil channel: an upstream race (see api/main_test.go).
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// point is what the live node answered right after one command.
type point struct {
	// seq is the session's last batch when the context was read; from the
	// command's own batch (before seq when the sections of its user
	// message came in a batch after it).
	seq, from uint64
	context   *memoryv1.ContextReply
}

// fixture is a stopped node's data directory written by real sessions.
type fixture struct {
	dir      string
	sessions []string
	points   map[string][]point // session -> after each command, in order
	batches  int
	lastSeq  uint64
	// scopes: scope aggregates written besides the sessions.
	scopes int
	err    error
}

var (
	fixOnce sync.Once
	fix     fixture
)

const (
	fixSessions = 6
	fixAppends  = 24
)

// nodeFixture returns the shared data directory (do not modify it: copy it
// with copyFixture). It is built once: a node, sessions with 1200-token
// budgets driven until they compress, then the node is stopped.
func nodeFixture(t testing.TB) *fixture {
	t.Helper()
	fixOnce.Do(func() { fix = buildFixture() })
	if fix.err != nil {
		t.Fatalf("fixture: %v", fix.err)
	}
	return &fix
}

func buildFixture() (f fixture) {
	f.dir = filepath.Join(fixtureRoot, "node")
	f.points = map[string][]point{}
	cfg := node.DefaultConfig()
	cfg.DataDir = f.dir
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.HTTPAddr = ""
	cfg.Actors.SnapshotEvery = 7 // live answers also come from snapshot+tail recoveries
	// broken_test.go purges copies of this log to make gaps: a stream with
	// deny_purge (the default) refuses that.
	cfg.DenyPurge = false
	// migrate_test.go moves a log that denies deletes (as deployments
	// created before erasure have) to one that allows them.
	cfg.LogAllowDelete = false
	ctx := context.Background()
	n, err := node.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		f.err = err
		return f
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := n.Shutdown(sctx); err != nil && f.err == nil {
			f.err = err
		}
	}()
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		f.err = err
		return f
	}
	defer nc.Close()
	if f.err = drive(ctx, client.New(nc), &f); f.err != nil {
		return f
	}
	// Let the node's projector catch up, so its projection.db is complete.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	f.err = n.WaitProjected(wctx, f.lastSeq)
	return f
}

// drive writes the sessions, interleaved, recording after every command the
// stream sequence it got and the context the node then returned.
func drive(ctx context.Context, c *client.Client, f *fixture) error {
	rnd := rand.New(rand.NewPCG(7, 11))
	record := func(id string, seq uint64) error {
		cx, err := c.Context(ctx, id)
		if err != nil {
			return fmt.Errorf("context %s: %w", id, err)
		}
		f.batches++
		from := seq
		if cx.GetSeq() > seq {
			// The sections of an append's user message, stored in a batch
			// of their own after it (actors.Later): the context is theirs.
			f.batches++
			seq = cx.GetSeq()
		}
		f.points[id] = append(f.points[id], point{seq: seq, from: from, context: cx})
		f.lastSeq = max(f.lastSeq, seq)
		return nil
	}
	for i := range fixSessions {
		id := fmt.Sprintf("s%d", i)
		f.sessions = append(f.sessions, id)
		rep, err := c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{
			UserId: fmt.Sprintf("u%d", i%2), AgentId: "a1",
			SystemPrompt:     "You are a careful analyst. Answer with numbers.",
			Patterns:         []string{"cite the table", "say when unsure"},
			MaxContextTokens: 1200, ReservedOutputTokens: 200,
		})
		if err != nil {
			return fmt.Errorf("create %s: %w", id, err)
		}
		if err := record(id, rep.GetResult().GetSeq()); err != nil {
			return err
		}
	}
	// Long-term memory the context assembler draws on: the
	// user scopes, the agent and global.
	for _, e := range []struct {
		scope      client.Scope
		key, value string
	}{
		{client.User("u0"), "units", "u0 reports revenue in EUR, margin in percent"},
		{client.User("u1"), "region", "u1 owns the EMEA region forecast"},
		{client.Agent("a1"), "style", "cite the invoice table and the churn query"},
		{client.Global(), "policy", "refund anomaly above 3706 needs a second reviewer"},
	} {
		rep, err := c.Put(ctx, e.scope, &memoryv1.PutEntryRequest{Key: e.key, Value: []byte(e.value), ContentType: "text/plain", Importance: 0.5})
		if err != nil {
			return fmt.Errorf("put %s %s: %w", e.scope, e.key, err)
		}
		f.batches++ // a log batch, not a session point
		f.scopes++
		f.lastSeq = max(f.lastSeq, rep.GetResult().GetSeq())
	}
	words := strings.Fields("churn revenue customer O'Brien order-id 3706 region EMEA forecast quarter margin anomaly invoice refund latency")
	for turn := range fixAppends {
		for _, id := range f.sessions {
			if rnd.IntN(4) == 0 {
				continue // sessions progress at different speeds
			}
			var sb strings.Builder
			for range 10 + rnd.IntN(30) {
				sb.WriteString(words[rnd.IntN(len(words))])
				sb.WriteByte(' ')
			}
			msgs := []*memoryv1.MessageInput{{Role: memoryv1.Role_ROLE_USER, Content: fmt.Sprintf("turn %d: %s?", turn, sb.String())}}
			if turn%3 == 0 {
				call := fmt.Sprintf("call-%s-%d", id, turn)
				msgs = append(msgs,
					&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, ToolCalls: []*memoryv1.ToolCall{{Id: call, Name: "sql", Arguments: `{"q":"select 1"}`}}},
					&memoryv1.MessageInput{Role: memoryv1.Role_ROLE_TOOL, ToolCallId: call, Name: "sql", Content: "rows: 42, total 1234.5"})
			}
			msgs = append(msgs, &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_ASSISTANT, Content: "The answer is " + sb.String()})
			rep, err := c.AppendMessages(ctx, id, msgs...)
			if err != nil {
				return fmt.Errorf("append %s turn %d: %w", id, turn, err)
			}
			if err := record(id, rep.GetResult().GetSeq()); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyFixture copies the fixture's data directory to a fresh temp dir.
func copyFixture(t *testing.T) string {
	t.Helper()
	src := nodeFixture(t).dir
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy fixture: %v", err)
	}
	return dst
}
