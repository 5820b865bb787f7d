package replay

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestNamespaceCommands runs the README's walk-through against a running
// node: export user:alice to a file, import it into user:bob (a dry run
// first, which writes nothing; a second run changes nothing), archive
// alice's old episodic entries, list them, restore one.
func TestNamespaceCommands(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	n, nc := node.StartForTest(t, func(c *node.Config) { c.Now = func() time.Time { return time.Unix(0, now.Load()) } })
	c := client.New(nc)
	ctx := context.Background()
	alice := client.User("alice")
	for _, p := range []*memoryv1.PutEntryRequest{
		{Key: "pref/tea", Value: []byte("green tea")},
		{Key: "trip/lisbon", Value: []byte("went to Lisbon"), MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC},
	} {
		if _, err := c.Put(ctx, alice, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "hello there"}); err != nil {
		t.Fatal(err)
	}
	url := n.ClientURL()
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := Run(ctx, append(args, "--nats-url", url), &out, &errb); err != nil {
			t.Fatalf("replay %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}
	file := filepath.Join(t.TempDir(), "alice.json")
	run("namespace", "export", "user:alice", "--out", file, "--messages", "--min-seq", fmt.Sprint(c.LastWriteSeq()))
	f, keys, err := readFile(file)
	if err != nil || len(keys) != 2 || len(f.Sessions) != 1 || len(f.Sessions[0].Messages) != 1 {
		t.Fatalf("export file: %v, %d keys, %v", err, len(keys), f)
	}
	if out := run("namespace", "import", "user:bob", "--in", file, "--dry-run"); !strings.Contains(out, "would import user:alice into user:bob: 2 changed") ||
		!strings.Contains(out, "messages: 1 sessions (1 new), 1 messages appended") {
		t.Fatalf("dry run: %s", out)
	}
	if l, _ := c.ListEntries(ctx, client.User("bob"), nil); len(l.GetEntries()) != 0 {
		t.Fatalf("the dry run wrote %v", l.GetEntries())
	}
	if out := run("namespace", "import", "user:bob", "--in", file); !strings.Contains(out, "2 changed") || !strings.Contains(out, "1 messages appended") {
		t.Fatalf("import: %s", out)
	}
	info, err := c.Get(ctx, "s1-bob")
	if err != nil || info.GetUserId() != "bob" {
		t.Fatalf("bob's imported session: %v, %v", info, err)
	}
	if r, err := c.Recall(ctx, "s1-bob", &memoryv1.RecallRequest{MinSeq: info.GetSeq()}); err != nil || len(r.GetMessages()) != 1 || r.GetMessages()[0].GetContent() != "hello there" {
		t.Fatalf("bob's imported session: %v, %v", r, err)
	}
	if out := run("namespace", "import", "user:bob", "--in", file); !strings.Contains(out, "0 changed, 2 unchanged") || !strings.Contains(out, "0 messages appended, 1 already there") {
		t.Fatalf("second import: %s", out)
	}
	if out := run("namespace", "import", "project:p1", "--in", file, "--skip-messages"); !strings.Contains(out, "2 changed") || strings.Contains(out, "messages:") {
		t.Fatalf("import without the messages into a project: %s", out)
	}
	now.Add(int64(31 * 24 * time.Hour))
	if out := run("namespace", "archive", "user:alice", "--older-than-days", "30"); !strings.Contains(out, "archived 1 entries") || !strings.Contains(out, "trip/lisbon") {
		t.Fatalf("archive: %s", out)
	}
	if out := run("namespace", "list", "user:alice", "--archived"); !strings.Contains(out, "trip/lisbon\tv2\tepisodic\tarchived") {
		t.Fatalf("list --archived: %q", out)
	}
	if out := run("namespace", "restore", "user:alice", "trip/lisbon"); !strings.Contains(out, "restored trip/lisbon as version 3 (from version 2)") {
		t.Fatalf("restore: %s", out)
	}
	var out, errb bytes.Buffer
	if err := Run(ctx, []string{"namespace", "export", "user:alice"}, &out, &errb); ExitCode(err) != 2 {
		t.Fatalf("export without --nats-url: %v, want a usage error", err)
	}
	if err := Run(ctx, []string{"namespace", "archive", "nope", "--nats-url", url}, &out, &errb); ExitCode(err) != 2 {
		t.Fatalf("a bad namespace: %v, want a usage error", err)
	}
}

func readFile(path string) (*NamespaceFile, []*memoryv1.KeyHistory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return ReadNamespaceFile(f)
}
