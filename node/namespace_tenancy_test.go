package node_test

import (
	"context"
	"testing"

	"github.com/agentmem/agentmem/client"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// TestNamespaceTenancy: who may manage a namespace as a unit. The owner
// exports, imports, archives and restores in its own user's and agent's
// scopes; a reader of the user exports it but changes nothing; another
// tenant is refused everything (the attack suite's rows); a shared
// scope is an admin's to export.
func TestNamespaceTenancy(t *testing.T) {
	tn := startTenantNode(t)
	tu := connectTenants(t, tn)
	seedVictims(t, tu)
	ctx := context.Background()
	u2 := client.User("u2")
	exp, err := tu.a2.c.ExportPage(ctx, u2, &memoryv1.ExportEntriesRequest{})
	if err != nil || len(exp.GetKeys()) != 1 {
		t.Fatalf("owner's export: %v, %v", exp, err)
	}
	if _, err := tu.a2.c.ExportPage(ctx, client.Agent("a2"), &memoryv1.ExportEntriesRequest{}); err != nil {
		t.Fatalf("agent's export of its own memory: %v", err)
	}
	if _, err := tu.a2.c.Archive(ctx, u2, &memoryv1.ArchiveEntriesRequest{OlderThanDays: 1, DryRun: true}); err != nil {
		t.Fatalf("owner's archive dry run: %v", err)
	}
	// front-u2 reads u2: it may export, not change.
	if _, err := tu.front2.c.ExportPage(ctx, u2, &memoryv1.ExportEntriesRequest{}); err != nil {
		t.Fatalf("reader's export: %v", err)
	}
	for name, err := range map[string]error{
		"import":  second(tu.front2.c.Import(ctx, u2, &memoryv1.ImportEntriesRequest{Keys: exp.GetKeys()})),
		"archive": second(tu.front2.c.Archive(ctx, u2, &memoryv1.ArchiveEntriesRequest{OlderThanDays: 1})),
		"restore": second(tu.front2.c.Restore(ctx, u2, &memoryv1.RestoreEntryRequest{Key: "pref"})),
	} {
		if client.Code(err) != 403 {
			t.Errorf("reader's %s: %v, want 403", name, err)
		}
	}
	// a1 imports into its own user's scope what it is given.
	imp, err := tu.a1.c.Import(ctx, client.User("u1"), &memoryv1.ImportEntriesRequest{Keys: exp.GetKeys()})
	if err != nil || imp.GetChanged() != 1 {
		t.Fatalf("import into a1's own user: %v, %v", imp, err)
	}
	if e, err := tu.a1.c.GetEntry(ctx, client.User("u1"), "pref", 0); err != nil || e.GetUpdatedBy() != "a1" {
		t.Fatalf("imported entry: %v, %v (attributed to the importer)", e, err)
	}
	// The admin exports a shared scope; a member does not.
	if _, err := tu.ops.c.ExportPage(ctx, client.Project("p1"), &memoryv1.ExportEntriesRequest{}); err != nil {
		t.Fatalf("admin's export of project p1: %v", err)
	}
	if _, err := tu.a1.c.ExportPage(ctx, client.Project("p1"), &memoryv1.ExportEntriesRequest{}); client.Code(err) != 403 {
		t.Fatalf("member's export of project p1: %v, want 403", err)
	}
}

func second[T any](_ T, err error) error { return err }
