package node_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/node"
)

const jsonClientDir = "../conformance/json"

// TestNodeJSClientAgentLoop runs conformance/json/run.mjs: a whole agent
// loop in JSON with the official NATS JS client (@nats-io/transport-node,
// installed by .ci/run) and no protobuf library — create, append in the
// OpenAI message shape with tool calls, a retry, context in OpenAI and
// Anthropic shape, search, memory write/read, and a JSON watch that sees
// its own changes in order, values decompressed.
func TestNodeJSClientAgentLoop(t *testing.T) {
	nodeBin, err := exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join(jsonClientDir, "node_modules", "@nats-io", "transport-node"))
	if err != nil || statErr != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("node or %s/node_modules missing (run npm ci there; CI fails instead of skipping)", jsonClientDir)
		}
		t.Fatalf("node (%v) or %s/node_modules (%v) missing: .ci/run installs them", err, jsonClientDir, statErr)
	}
	n, _ := node.StartForTest(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, nodeBin, filepath.Join(jsonClientDir, "run.mjs"), n.ClientURL()).CombinedOutput()
	if err != nil {
		t.Fatalf("run.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("run.mjs: %s", out)
	}
	t.Logf("%s", out)
}
