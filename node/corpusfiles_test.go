package node

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/natsembed"
	"github.com/agentmem/agentmem/projections"
)

// TestCorpusOwners: every node computes the same owners from the same
// live nodes, in any order, each taking C/N partitions; when a node
// leaves, only its partitions move.
func TestCorpusOwners(t *testing.T) {
	a := corpusOwners(6, []string{"n2", "n0", "n1"})
	b := corpusOwners(6, []string{"n1", "n2", "n0", "n1"})
	if !slices.Equal(a, b) {
		t.Fatalf("owners %v and %v differ", a, b)
	}
	load := map[string]int{}
	for _, o := range a {
		load[o]++
	}
	if len(load) != 3 || load["n0"] != 2 || load["n1"] != 2 || load["n2"] != 2 {
		t.Fatalf("owners %v: loads %v, want two each", a, load)
	}
	without := corpusOwners(6, []string{"n1", "n2"})
	for c := range a {
		if a[c] != "n0" && without[c] != a[c] {
			t.Fatalf("partition %d moved from %s to %s though its owner stayed (%v → %v)", c, a[c], without[c], a, without)
		}
	}
	if got := corpusOwners(3, nil); !slices.Equal(got, []string{"", "", ""}) {
		t.Fatalf("no live node: owners %v, want none", got)
	}
}

// TestCorpusFileOfAnotherLayout: a partition file left by a node of
// another partition count is deleted and made again from the log, never
// served as it is.
func TestCorpusFileOfAnotherLayout(t *testing.T) {
	_, nc := natsembed.StartForTest(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old, err := projections.Open(filepath.Join(dir, corpusFileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetCorpusPartition(3, 1); err != nil {
		t.Fatal(err)
	}
	old.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := events.NewJetStreamLog(ctx, js, events.DefaultJetStreamConfig()); err != nil {
		t.Fatal(err)
	}
	pcfg := projections.DefaultConfig()
	pcfg.Partitions = 1
	m := &corpusFiles{parts: 6, dir: dir, js: js, codec: events.NewCodec(), pcfg: pcfg,
		self: func() string { return "a" }, live: func() []string { return []string{"a"} },
		serve:  func(int, corpusFile) (*nats.Subscription, error) { return nil, nil },
		logger: slog.New(slog.DiscardHandler), tick: 10 * time.Millisecond, grace: time.Second,
		files: map[int]*heldFile{}}
	if err := m.open(ctx, 1); err != nil {
		t.Fatal(err)
	}
	defer m.closeAll()
	f, ok := m.Any()
	if !ok {
		t.Fatal("no file open")
	}
	if part, parts := f.s.CorpusPartitionOf(); part != 1 || parts != 6 {
		t.Fatalf("the file holds partition %d of %d, want 1 of 6 (made again)", part, parts)
	}
}
