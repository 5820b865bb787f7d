package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// TestTenantQuotas: with the example's principals and small limits, a1 is
// refused a third session (413 max_sessions), a fourth entry in a scope
// (413 max_entries_per_scope) and a value that would pass the scope's bytes
// (413 max_bytes_per_scope); replacing an existing key is still allowed;
// another tenant is not affected; the refusals are counted in /metrics.
func TestTenantQuotas(t *testing.T) {
	data, err := os.ReadFile(tenantsFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg tenancy.Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Limits = tenancy.Limits{MaxSessions: 2, MaxEntriesPerScope: 3, MaxBytesPerScope: 1000}
	small := filepath.Join(t.TempDir(), "tenants.json")
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(small, data, 0o600); err != nil {
		t.Fatal(err)
	}
	n, _ := node.StartForTest(t, func(c *node.Config) {
		c.NATSConfig, c.Tenants = tenantsNATSConf, small
		c.NATSUser, c.NATSPassword = "node", "node-secret"
		c.NATSAPIUser, c.NATSAPIPassword = "node-api", "node-api-secret"
		c.HTTPAddr = "127.0.0.1:0"
	})
	tn := &tenantNode{n: n, url: n.ClientURL()}
	a1, a2 := tn.as(t, "agent-a1", "a1-secret"), tn.as(t, "agent-a2", "a2-secret")
	ctx := context.Background()
	refused := func(err error, limit string) {
		t.Helper()
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != 413 || ce.Field != limit {
			t.Fatalf("got %v, want 413 %s", err, limit)
		}
	}
	for _, id := range []string{"q1", "q2"} {
		if _, err := a1.c.CreateSession(ctx, id, &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = a1.c.ListSessions(ctx, &memoryv1.ListSessionsRequest{AgentId: "a1", MinSeq: a1.c.LastWriteSeq()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a1.c.CreateSession(ctx, "q3", &memoryv1.CreateSessionRequest{UserId: "u1"})
	refused(err, "max_sessions")
	if _, err := a2.c.CreateSession(ctx, "q4", &memoryv1.CreateSessionRequest{UserId: "u2"}); err != nil {
		t.Fatalf("a2 is not bounded by a1's sessions: %v", err)
	}

	w1 := client.Workflow("w1")
	for _, k := range []string{"k1", "k2", "k3"} {
		if _, err := a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: k, Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: "k4", Value: []byte("v")})
	refused(err, "max_entries_per_scope")
	if _, err := a1.c.Put(ctx, w1, &memoryv1.PutEntryRequest{Key: "k1", Value: []byte("replaced")}); err != nil {
		t.Fatalf("replacing a key within the entry limit: %v", err)
	}
	_, err = a1.c.Put(ctx, client.Agent("a1"), &memoryv1.PutEntryRequest{Key: "big", Value: []byte(strings.Repeat("x", 1001))})
	refused(err, "max_bytes_per_scope")

	resp, err := http.Get("http://" + n.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, want := range []string{`agentmem_api_limited_total{limit="max_sessions"} 1`, `agentmem_api_limited_total{limit="max_entries_per_scope"} 1`, `agentmem_api_limited_total{limit="max_bytes_per_scope"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
