package node_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The SDKs of sdk/ are tested against a real node: each test starts one with
// its HTTP API on a free loopback port and runs the SDK's own tests against
// it. Without the runtime the test skips, except in CI (CI set), where it
// fails.
const sdkDir = "../sdk"

func runtime(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s is not installed (CI fails instead of skipping)", name)
		}
		t.Fatalf("%s is not installed: %v", name, err)
	}
	return p
}

// TestPythonSDKAgainstNode runs sdk/python's unittest suite (python3,
// standard library only) against a node.
func TestPythonSDKAgainstNode(t *testing.T) {
	py := runtime(t, "python3")
	_, _, base := httpNode(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir, _ := filepath.Abs(filepath.Join(sdkDir, "python"))
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-v", "-s", "tests")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTMEM_URL="+base, "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python3 -m unittest: %v", err)
	}
	if strings.Contains(string(out), "skipped") {
		t.Fatalf("some SDK tests were skipped")
	}
}

// TestTypeScriptSDKAgainstNode type-checks sdk/ts's declarations (tsc) and
// runs its node --test suite against a node (which also checks its generated
// types match sdk/openapi.json, which TestOpenAPISnapshot keeps equal to
// the served document).
func TestTypeScriptSDKAgainstNode(t *testing.T) {
	nodeBin := runtime(t, "node")
	dir, _ := filepath.Abs(filepath.Join(sdkDir, "ts"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The declarations type-check (tsc from sdk/ts/package-lock.json: npm ci).
	tsc := filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing: .ci/run runs npm ci in sdk/ts", tsc)
		}
		t.Logf("skipping the type check: %s missing (run npm ci in sdk/ts)", tsc)
	} else {
		tc := exec.CommandContext(ctx, nodeBin, tsc, "-p", "tsconfig.json")
		tc.Dir = dir
		if out, err := tc.CombinedOutput(); err != nil {
			t.Fatalf("tsc: %v\n%s", err, out)
		}
	}
	_, _, base := httpNode(t, nil)
	cmd := exec.CommandContext(ctx, nodeBin, "--test", "test/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTMEM_URL="+base)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("node --test: %v", err)
	}
	if !strings.Contains(string(out), "# skipped 0") || !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("node --test: some tests failed or were skipped")
	}
}
