package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestSecondNodeOnDataDirExits runs a node as a process, appends, then
// starts a second node process on the same --data-dir (other ports, no
// projector, as in the reported incident): it must exit non-zero within
// 5 s naming the first node's pid, and every write the first node
// acknowledged must still be served, before and after the first node's
// restart.
func TestSecondNodeOnDataDirExits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the node binary")
	}
	bin := buildNode(t)
	dataDir, addr := t.TempDir(), freePort(t)
	first := startNode(t, bin, dataDir, addr)

	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(nc)
	ctx := context.Background()
	const sessions, appends = 4, 10
	acked := map[string]*memoryv1.ContextReply{}
	for i := range sessions {
		id := fmt.Sprintf("lock-%d", i)
		if _, err := c.CreateSession(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		for j := range appends {
			if _, err := c.AppendMessages(ctx, id, message(j)); err != nil {
				t.Fatal(err)
			}
		}
		if acked[id], err = c.Context(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()

	second := exec.Command(bin, "--data-dir", dataDir, "--nats-listen", freePort(t), "--http", freePort(t), "--projector=false")
	var stderr bytes.Buffer
	second.Stdout, second.Stderr = &stderr, &stderr
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("second node exited with %v, want a non-zero exit\n%s", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		_ = second.Process.Kill()
		<-done
		t.Fatalf("second node still running after 5 s\n%s", stderr.String())
	}
	want := fmt.Sprintf("is in use by pid %d on host", first.Process.Pid)
	if !strings.Contains(stderr.String(), "data dir "+dataDir) || !strings.Contains(stderr.String(), want) {
		t.Fatalf("second node's stderr does not name the data dir and pid %d:\n%s", first.Process.Pid, stderr.String())
	}
	t.Logf("second node: %s", strings.TrimSpace(stderr.String()))

	check := func(when string) {
		t.Helper()
		nc, err := nats.Connect("nats://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		c := client.New(nc)
		for id, want := range acked {
			info, err := c.Get(ctx, id)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, id, err)
			}
			if info.GetTotalMessages() != appends || info.GetVersion() != want.GetVersion() {
				t.Errorf("%s: %s has %d messages at version %d, acknowledged %d at version %d",
					when, id, info.GetTotalMessages(), info.GetVersion(), appends, want.GetVersion())
			}
			got, err := c.Context(ctx, id)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, id, err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("%s: %s: context differs from the acknowledged one", when, id)
			}
		}
	}
	check("first node, after the second one exited")

	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first node exited with %v after SIGTERM", err)
	}
	startNode(t, bin, dataDir, addr)
	check("after the first node's restart")
}
