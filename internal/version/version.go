// Package version is agentmem's release version: every binary prints it
// with --version, the NATS service and the MCP server report it, and the
// HTTP API's OpenAPI document carries it. CHANGELOG.md says what each
// version changed.
package version

// Version is the release. A build may set another with
// -ldflags "-X github.com/agentmem/agentmem/internal/version.Version=…".
var Version = "0.2.0"
