package dirlock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary act as another process: "try DIR" tries
// to lock DIR and prints the error (exit 3 when locked); "hold DIR" locks
// DIR, prints "locked" and waits until killed (or stdin closes).
const helperEnv = "DIRLOCK_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	goleak.VerifyTestMain(m)
}

func helper(mode string) int {
	what, dir, _ := strings.Cut(mode, " ")
	l, err := Acquire(dir, "dirlock test helper")
	if err != nil {
		fmt.Println(err)
		if errors.Is(err, ErrLocked) {
			return 3
		}
		return 1
	}
	defer l.Close()
	if what == "hold" {
		fmt.Println("locked")
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	return 0
}

// child runs the test binary as a helper process.
func child(t *testing.T, mode, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode+" "+dir)
	return cmd
}

func TestSecondAcquireInProcessFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // created by Acquire
	l, err := Acquire(dir, "first")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Acquire(dir, "second")
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second Acquire = %v, want a *LockedError", err)
	}
	host, _ := os.Hostname()
	if le.Holder.PID != os.Getpid() || le.Holder.Host != host || le.Holder.What != "first" || le.Holder.Since.IsZero() {
		t.Errorf("holder %+v, want pid %d on %s", le.Holder, os.Getpid(), host)
	}
	want := fmt.Sprintf("data dir %s is in use by pid %d on host %s since ", dir, os.Getpid(), host)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	t.Log(err)
}

func TestAcquireFromChildProcessFails(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, "parent")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out, err := child(t, "try", dir).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("child: %v, want exit 3 (locked)\n%s", err, out)
	}
	if want := fmt.Sprintf("is in use by pid %d on host", os.Getpid()); !strings.Contains(string(out), want) {
		t.Errorf("child said %q, want it to name pid %d", out, os.Getpid())
	}
}

func TestCloseReleases(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, "first")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	l2, err := Acquire(dir, "second")
	if err != nil {
		t.Fatalf("Acquire after Close: %v", err)
	}
	defer l2.Close()
	if out, err := child(t, "try", dir).CombinedOutput(); err == nil {
		t.Fatalf("child locked a held directory: %s", out)
	}
}

// TestKilledHolderReleases: the kernel releases the lock of a process
// killed with SIGKILL; the stale holder record does not block anyone.
func TestKilledHolderReleases(t *testing.T) {
	dir := t.TempDir()
	cmd := child(t, "hold", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("holder said %q, %v", line, err)
	}

	_, err = Acquire(dir, "parent")
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
		t.Fatalf("Acquire while the child holds it = %v, want the child's pid %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	l, err := Acquire(dir, "parent")
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	defer l.Close()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"pid":`+strconv.Itoa(os.Getpid())) {
		t.Errorf("lock file %q does not record the new holder", b)
	}
}

func TestLockedErrorMessage(t *testing.T) {
	e := &LockedError{Dir: "./data"}
	if got, want := e.Error(), "dirlock: data dir ./data is in use by another process (holder not recorded yet)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	e.Holder = Holder{What: "agentmem node", PID: 1234, Host: "h", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if got, want := e.Error(), "dirlock: data dir ./data is in use by pid 1234 on host h since 2026-01-02T03:04:05Z (agentmem node)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
