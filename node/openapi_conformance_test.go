package node_test

import (
	"context"
	"encoding/json"
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

// TestOpenAPILint lints the document with Redocly CLI's recommended rules
// (conformance/openapi/redocly.yaml, none turned off): 0 errors, 0
// warnings.
func TestOpenAPILint(t *testing.T) {
	nodeBin, dir := openapiTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "node_modules/@redocly/cli/bin/cli.js", "lint", "../../sdk/openapi.json", "--config", "redocly.yaml", "--format", "json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.Output()
	var report struct {
		Totals   struct{ Errors, Warnings int } `json:"totals"`
		Problems []struct {
			RuleID  string `json:"ruleId"`
			Message string `json:"message"`
		} `json:"problems"`
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("redocly lint: %v %v\n%s", err, jerr, out)
	}
	if report.Totals.Errors != 0 || report.Totals.Warnings != 0 {
		t.Fatalf("redocly lint: %d errors, %d warnings: %+v", report.Totals.Errors, report.Totals.Warnings, report.Problems)
	}
}

// TestOpenAPIFuzz sends bodies generated from each operation's request
// schema, and valid by it (ajv), to a node (conformance/openapi/fuzz.mjs,
// seeded, 6 bodies per operation): no 5xx, every 4xx an ErrorDetail naming
// its field, every reply as declared, and at least 95 % of the bodies
// accepted (a 404 or 409 about the state the random body names is no
// refusal). AGENTMEM_FUZZ_SEED picks another seed.
func TestOpenAPIFuzz(t *testing.T) {
	nodeBin, dir := openapiTools(t)
	_, _, base := httpNode(t, nil)
	seed := os.Getenv("AGENTMEM_FUZZ_SEED")
	if seed == "" {
		seed = "1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "fuzz.mjs", base, seed, "6")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("seed %s:\n%s", seed, out)
	if err != nil {
		t.Fatalf("fuzz: %v", err)
	}
}
