package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/tenancy"
)

// TestNamespaceImportQuota: an import counts against the importer's
// per-scope quota like the puts it stands for: with max_entries_per_scope
// 3, a1 imports three keys into its user's scope, is refused a fourth key
// as a whole (413, nothing written), and may still re-import the three.
func TestNamespaceImportQuota(t *testing.T) {
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
	})
	a1 := (&tenantNode{n: n, url: n.ClientURL()}).as(t, "agent-a1", "a1-secret")
	ctx := context.Background()
	keys := func(names ...string) []*memoryv1.KeyHistory {
		var out []*memoryv1.KeyHistory
		for _, k := range names {
			out = append(out, &memoryv1.KeyHistory{Key: k, Versions: []*memoryv1.Entry{{Key: k, Value: []byte("v")}}})
		}
		return out
	}
	u1 := client.User("u1")
	if _, err := a1.c.Import(ctx, u1, &memoryv1.ImportEntriesRequest{Keys: keys("a", "b", "c")}); err != nil {
		t.Fatal(err)
	}
	_, err = a1.c.Import(ctx, u1, &memoryv1.ImportEntriesRequest{Keys: keys("a", "b", "c", "d")})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != 413 || ce.Field != "max_entries_per_scope" {
		t.Fatalf("a fourth key: %v, want 413 max_entries_per_scope", err)
	}
	if _, err := a1.c.GetEntry(ctx, u1, "d", 0); client.Code(err) != 404 {
		t.Fatalf("the refused import wrote d: %v", err)
	}
	if rep, err := a1.c.Import(ctx, u1, &memoryv1.ImportEntriesRequest{CommandId: "again", Keys: keys("a", "b", "c")}); err != nil || rep.GetUnchanged() != 3 {
		t.Fatalf("re-import: %v, %v", rep, err)
	}
}
