package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/node"
)

// insufficientResources is the JetStream error code of a write refused
// because a storage limit is reached (nats-server JSInsufficientResourcesErr;
// nats.go names no constant for it).
const insufficientResources jetstream.ErrorCode = 10023

// TestJetStreamStoreFull is the storage fault any machine can induce: the
// embedded server's JetStream store limit (max_file_store, 2 MiB) is
// filled by another stream (a ballast, standing in for whatever filled the
// disk) while four writers append. The server refuses every write with
// "insufficient resources"; the node answers 503 at once, /healthz names
// the log, agentmem_log_available drops to 0; once the ballast stream is
// deleted writes resume by themselves within recoveryBound, and no
// acknowledged write is lost or stored twice. (The real full disk, where
// the server stops answering and JetStream must be restarted, is
// TestDiskFull, which needs a tmpfs.)
func TestJetStreamStoreFull(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte("jetstream { max_file_store: 2MB }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startStreamNode(t, filepath.Join(dir, "data"), func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.HealthInterval = healthInterval
		c.NATSConfig = conf
	})
	w := startWriters(t, s.c, 4)
	defer w.stop()
	time.Sleep(500 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: "BALLAST", Subjects: []string{"ballast.>"}}); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	var stored int
	for {
		_, err := s.js.Publish(ctx, "ballast.x", chunk)
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == insufficientResources {
			break
		}
		if err != nil {
			t.Fatalf("ballast: %v", err)
		}
		stored++
	}
	filled := time.Now()
	t.Logf("ballast: %d KiB; JetStream's store is full", stored*64)
	body, down := waitHealthz(t, s.n, 503, noticeBound)
	t.Logf("/healthz 503 %s after the store filled: %v", down.Sub(filled).Round(time.Millisecond), body)
	if !strings.Contains(strings.Join(anyStrings(body["failing"]), ","), "log") {
		t.Errorf("/healthz does not name the log: %v", body)
	}
	time.Sleep(2 * time.Second)
	if got := s.gauge(t, "agentmem_log_available"); got != 0 {
		t.Errorf("agentmem_log_available = %v while full", got)
	}
	if got := counter(t, s.n, "agentmem_unavailable_total", "storage_limit"); got == 0 {
		t.Errorf("agentmem_unavailable_total{reason=storage_limit} = 0")
	}
	freed := time.Now()
	if err := s.js.DeleteStream(ctx, "BALLAST"); err != nil {
		t.Fatal(err)
	}
	full := w.between(filled, freed)
	byCode := summarize(t, "while full", full)
	for _, r := range full {
		if r.took > faultAnswer { // at once, typically (the log says); the contract is the store timeout
			t.Errorf("an append took %s to answer (code %d: %v), want within %s", r.took, r.code, r.err, faultAnswer)
		}
		if r.code != 0 && r.code != 503 {
			t.Errorf("an append answered %d (%v), want 503", r.code, r.err)
		}
	}
	if byCode[503] == 0 {
		t.Errorf("no 503 while the store was full")
	}
	_, up := waitHealthz(t, s.n, 200, recoveryBound)
	writes := w.waitAckAfter(t, freed, recoveryBound)
	w.stop()
	last := checkNoAckedWriteLost(t, w, s.js)
	if err := s.n.WaitProjected(ctx, last); err != nil {
		t.Fatal(err)
	}
	t.Logf("after the ballast was deleted: first acknowledged write %s, /healthz 200 %s",
		writes.Sub(freed).Round(time.Millisecond), up.Sub(freed).Round(time.Millisecond))
}
