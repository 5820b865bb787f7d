package node_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestNamespaceImportQuota: an import counts against the importer's
// per-scope quota like the puts it stands for: with max_entries_per_scope
// 3, a1 imports three keys into its user's scope, is refused a fourth key
// as a whole (413, nothing written), and may still re-import the three.
func TestNamespaceImportQuota(t *testing.T) {
	n := startSmallQuotaNode(t, nil)
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
	_, err := a1.c.Import(ctx, u1, &memoryv1.ImportEntriesRequest{Keys: keys("a", "b", "c", "d")})
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
