package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// freeOn is the free space of the file system holding dir.
func freeOn(t *testing.T, dir string) int64 {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize)
}

// TestDiskNearlyFullRestart (DESIGN §9a): a node restarted on a disk with
// less than --min-free-bytes free starts (placement takes its partitions:
// its leases are tiny), serves reads from what it stored, and refuses
// writes at once with 503 naming out_of_space.
func TestDiskNearlyFullRestart(t *testing.T) {
	dir := mountTmpfs(t, 20<<20)
	data := filepath.Join(dir, "data")
	mutate := func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.HealthInterval = healthInterval
		c.MinFreeBytes = 2 << 20
	}
	s := startStreamNode(t, data, mutate)
	ctx := context.Background()
	if _, err := s.c.CreateSession(ctx, "r1", &memoryv1.CreateSessionRequest{UserId: "u", MaxContextTokens: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for k := range 300 {
		if _, err := s.c.AppendMessages(ctx, "r1", userInput(fmt.Sprintf("message %d: %01000d", k, k))); err != nil {
			t.Fatal(err)
		}
	}
	s.shutdown(t)

	left := int64(128 << 10)
	t.Logf("ballast: %d bytes; %d bytes free", fill(t, filepath.Join(dir, "ballast"), left), freeOn(t, dir))

	began := time.Now()
	s = startStreamNode(t, data, mutate)
	t.Logf("restarted on a nearly full disk in %s (%d bytes free)", time.Since(began).Round(time.Millisecond), freeOn(t, dir))
	waitHealthz(t, s.n, 503, noticeBound)

	c := s.c.WithTimeout(faultAnswer)
	info, err := c.Get(ctx, "r1")
	if err != nil {
		t.Fatalf("read after the restart: %v", err)
	}
	if got := info.GetTotalMessages(); got != 300 {
		t.Errorf("session holds %d messages after the restart, want 300", got)
	}
	wbegan := time.Now()
	_, err = c.AppendMessages(ctx, "r1", userInput("one more"))
	took := time.Since(wbegan)
	if client.Code(err) != 503 || !strings.Contains(err.Error(), "out_of_space") {
		t.Fatalf("append on a nearly full disk: %v (code %d), want 503 naming out_of_space", err, client.Code(err))
	}
	if took > time.Second {
		t.Errorf("the refusal took %s, want at once", took)
	}
	t.Logf("append refused in %s: %v", took.Round(time.Millisecond), err)
	if free := freeOn(t, dir); free > left || free < left/2 {
		t.Logf("free space moved to %d while refusing writes", free)
	}
}
