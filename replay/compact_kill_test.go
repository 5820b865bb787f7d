//go:build unix

package replay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmem/agentmem/events"
)

// compactChildEnv names the data dir a child process compacts; it kills
// itself (SIGKILL) at the step in compactKillEnv ("<stream>/<step>").
const (
	compactChildEnv = "AGENTMEM_TEST_COMPACT_DIR"
	compactKillEnv  = "AGENTMEM_TEST_COMPACT_KILL_AT"
)

// TestCompactChild is the child process of TestCompactKilled (skipped
// as a test of its own: it only runs with compactChildEnv set).
func TestCompactChild(t *testing.T) {
	dir := os.Getenv(compactChildEnv)
	if dir == "" {
		return
	}
	at := os.Getenv(compactKillEnv)
	_, err := Compact(context.Background(), CompactConfig{Conn: Conn{DataDir: dir}, Observe: func(stream string, s events.CompactStep, done, total uint64) {
		if stream+"/"+string(s) == at && done >= total/2 {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}}, io.Discard)
	t.Fatalf("the child was not killed at %s: %v", at, err)
}

// TestCompactKilled: `replay compact` killed with SIGKILL in the middle of
// a step (the log's copy verified, the log being copied back, the
// snapshot bucket deleted, the projection file being rewritten): a node
// refuses the directory where a stream is not whole, and a second run
// says it resumed and ends as clean as an uninterrupted one.
func TestCompactKilled(t *testing.T) {
	for _, at := range []string{
		"MEM/" + string(events.StepCompactVerify),
		"MEM/" + string(events.StepCompactCopyBack),
		"KV_MEM_SNAPSHOTS/" + string(events.StepCompactDelete),
		ProjectionFile + "/" + string(StepCompactFile),
	} {
		t.Run(strings.ReplaceAll(at, " ", "_"), func(t *testing.T) {
			dir := copyFixture(t)
			eraseInto(t, dir)
			wantLog, wantProj := exported(t, dir)

			cmd := exec.Command(os.Args[0], "-test.run=^TestCompactChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), compactChildEnv+"="+dir, compactKillEnv+"="+at)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child at %s: %v, want killed by SIGKILL\n%s", at, err, out)
			}

			var buf bytes.Buffer
			if err := Run(context.Background(), []string{"compact", "--data-dir", dir}, &buf, io.Discard); err != nil {
				t.Fatalf("compact after the kill at %s: %v\n%s", at, err, buf.String())
			}
			if !strings.HasPrefix(at, ProjectionFile) && !strings.Contains(buf.String(), "resumed") {
				t.Errorf("compact after the kill does not say it resumed:\n%s", buf.String())
			}
			checkCompactedDir(t, dir, wantLog, wantProj)
		})
	}
}
