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

// The HTTP API as a client generated from its OpenAPI document sees it
// (conformance/openapi, its tools pinned by package-lock.json: npm ci, which
// make deps runs). Without node or those packages the tests skip, except
// in CI, where they fail.
const openapiDir = "../conformance/openapi"

func openapiTools(t *testing.T) (nodeBin, dir string) {
	t.Helper()
	nodeBin = runtime(t, "node")
	dir, _ = filepath.Abs(openapiDir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openapi-typescript")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s/node_modules missing: make deps runs npm ci there", openapiDir)
		}
		t.Skipf("%s/node_modules missing (npm ci there; CI fails instead of skipping)", openapiDir)
	}
	return nodeBin, dir
}

// runIn runs a command in dir, bounded, and returns its output; it fails
// the test when the command fails.
func runIn(t *testing.T, dir string, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGeneratedClientConversation generates a TypeScript client from the
// document a node serves (openapi-typescript), type-checks a whole agent
// conversation written against it with openapi-fetch (tsc --noEmit: an
// OpenAI reply appended as it comes, the Anthropic context's blocks, the
// delete's union, typed errors, the watch's Last-Event-ID), then runs it
// against the node, every JSON reply validated with ajv against the schema
// the document declares for it.
func TestGeneratedClientConversation(t *testing.T) {
	nodeBin, dir := openapiTools(t)
	_, _, base := httpNode(t, nil)
	runIn(t, dir, 60*time.Second, nodeBin, "node_modules/openapi-typescript/bin/cli.js", base+"/v1/openapi.json", "-o", "generated/schema.d.ts")
	runIn(t, dir, 120*time.Second, nodeBin, "node_modules/typescript/bin/tsc", "--noEmit", "-p", ".")
	runIn(t, dir, 120*time.Second, nodeBin, "node_modules/typescript/bin/tsc", "-p", ".")
	out := runIn(t, dir, 60*time.Second, nodeBin, "src/conversation.js", base)
	if !strings.Contains(out, `"ok":true`) {
		t.Fatalf("conversation: %s", out)
	}
	t.Logf("%s", out)
}
