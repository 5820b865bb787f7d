package node_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// testClock is a settable node clock.
type testClock struct{ at atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Unix(0, c.at.Load()) }
func (c *testClock) advance(d time.Duration) { c.at.Add(int64(d)) }
func newTestClock() *testClock               { c := &testClock{}; c.at.Store(time.Now().UnixNano()); return c }
func episodic(key, v string) *memoryv1.PutEntryRequest {
	return &memoryv1.PutEntryRequest{Key: key, Value: []byte(v), MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, Tags: []string{"t"}, Metadata: map[string]string{"src": "test"}}
}

// TestNamespaceArchiveRestore: episodic entries written 40 days ago are
// listed by age and type, archived by "older than 30 days" (a dry run
// first, which changes nothing), then out of get, list and search but
// listed with archived, and restored with their value; a soft-deleted
// semantic entry is restored by key too. After a restart and a projection
// rebuild the archive and the restore are what the log says.
func TestNamespaceArchiveRestore(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	n, nc := node.StartForTest(t, func(c *node.Config) { c.Now, c.DataDir = clk.now, dir })
	c := client.New(nc)
	ctx := context.Background()
	u := client.User("u1")
	for _, p := range []*memoryv1.PutEntryRequest{episodic("ep/old1", "the old trip to Lisbon"), episodic("ep/old2", "the old dinner"),
		{Key: "fact", Value: []byte("likes tea")}} {
		if _, err := c.Put(ctx, u, p); err != nil {
			t.Fatal(err)
		}
	}
	clk.advance(40 * 24 * time.Hour)
	if _, err := c.Put(ctx, u, episodic("ep/new", "yesterday's walk")); err != nil {
		t.Fatal(err)
	}
	old, err := c.ListEntries(ctx, u, &memoryv1.ListEntriesRequest{MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, OlderThanSeconds: 30 * 24 * 3600})
	if err != nil || keysOf(old.GetEntries()) != "ep/old1,ep/old2" {
		t.Fatalf("episodic older than 30 days: %v, %v", keysOf(old.GetEntries()), err)
	}
	dry, err := c.Archive(ctx, u, &memoryv1.ArchiveEntriesRequest{OlderThanDays: 30, DryRun: true})
	if err != nil || !dry.GetDryRun() || len(dry.GetKeys()) != 2 {
		t.Fatalf("dry run: %v, %v", dry, err)
	}
	if _, err := c.GetEntry(ctx, u, "ep/old1", 0); err != nil {
		t.Fatalf("the dry run archived: %v", err)
	}
	// A context of u1's session offers the memory before the archive, not
	// after it.
	if _, err := c.CreateSession(ctx, "s1", &memoryv1.CreateSessionRequest{UserId: "u1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "remember my trip to Lisbon?"}); err != nil {
		t.Fatal(err)
	}
	if !contextHas(t, c, "s1", "the old trip to Lisbon") {
		t.Fatal("the context does not offer the entry before the archive")
	}
	arch, err := c.Archive(ctx, u, &memoryv1.ArchiveEntriesRequest{OlderThanDays: 30})
	if err != nil || len(arch.GetKeys()) != 2 || arch.GetMore() {
		t.Fatalf("archive: %v, %v", arch, err)
	}
	if _, err := c.GetEntry(ctx, u, "ep/old1", 0); client.Code(err) != 404 {
		t.Fatalf("get of an archived entry: %v, want 404", err)
	}
	live, _ := c.ListEntries(ctx, u, nil)
	if keysOf(live.GetEntries()) != "ep/new,fact" {
		t.Fatalf("live after the archive: %s", keysOf(live.GetEntries()))
	}
	if hits, err := c.SearchEntries(ctx, u, &memoryv1.SearchEntriesRequest{Query: "Lisbon"}); err != nil || len(hits.GetHits()) != 0 {
		t.Fatalf("search finds an archived entry: %v, %v", hits, err)
	}
	if _, err := c.AppendMessages(ctx, "s1", &memoryv1.MessageInput{Role: memoryv1.Role_ROLE_USER, Content: "and Lisbon again?"}); err != nil {
		t.Fatal(err)
	}
	if contextHas(t, c, "s1", "the old trip to Lisbon") {
		t.Fatal("the context offers an archived entry")
	}
	archived, _ := c.ListEntries(ctx, u, &memoryv1.ListEntriesRequest{Archived: true})
	if keysOf(archived.GetEntries()) != "ep/old1,ep/old2" || string(archived.GetEntries()[0].GetValue()) != "the old trip to Lisbon" {
		t.Fatalf("archived list: %v", archived.GetEntries())
	}
	again, err := c.Archive(ctx, u, &memoryv1.ArchiveEntriesRequest{OlderThanDays: 30})
	if err != nil || len(again.GetKeys()) != 0 {
		t.Fatalf("a second archive: %v, %v", again, err)
	}
	res, err := c.Restore(ctx, u, &memoryv1.RestoreEntryRequest{Key: "ep/old1"})
	if err != nil || string(res.GetEntry().GetValue()) != "the old trip to Lisbon" || res.GetEntry().GetChange() != memoryv1.ChangeKind_CHANGE_KIND_RESTORE {
		t.Fatalf("restore: %v, %v", res, err)
	}
	if res.GetEntry().GetExpiresUnixNano() <= clk.now().UnixNano() {
		t.Fatalf("a restored episodic entry is already expired")
	}
	// A soft delete, restored by key.
	if _, err := c.DeleteEntry(ctx, u, &memoryv1.DeleteEntryRequest{Key: "fact"}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Restore(ctx, u, &memoryv1.RestoreEntryRequest{Key: "fact"}); err != nil || string(res.GetEntry().GetValue()) != "likes tea" {
		t.Fatalf("restore of a deleted entry: %v, %v", res, err)
	}
	for _, r := range []struct {
		req  *memoryv1.RestoreEntryRequest
		code int
	}{{&memoryv1.RestoreEntryRequest{Key: "fact"}, 409}, {&memoryv1.RestoreEntryRequest{Key: "nope"}, 404}, {&memoryv1.RestoreEntryRequest{Key: ""}, 400}} {
		if _, err := c.Restore(ctx, u, r.req); client.Code(err) != r.code {
			t.Errorf("restore %q: %v, want %d", r.req.GetKey(), err, r.code)
		}
	}
	if _, err := c.Archive(ctx, u, &memoryv1.ArchiveEntriesRequest{}); client.Code(err) != 400 {
		t.Errorf("archive without older_than_days: %v, want 400", err)
	}

	// The log reproduces it: a restart, and a rebuilt projection.
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := n.WaitProjected(sctx, c.LastWriteSeq()); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := replay.Verify(ctx, replay.VerifyConfig{Conn: replay.Conn{DataDir: dir}}, &out); err != nil {
		t.Fatalf("replay verify: %v\n%s", err, out.String())
	}
	_, c2 := startAt(t, dir, node.DefaultConfig().DuplicateWindow)
	archived, err = c2.ListEntries(ctx, u, &memoryv1.ListEntriesRequest{Archived: true})
	if err != nil || keysOf(archived.GetEntries()) != "ep/old2" {
		t.Fatalf("archived after a restart: %v, %v", keysOf(archived.GetEntries()), err)
	}
}

// TestNamespaceExportImport: a user's namespace (live, archived, deleted
// entries, several versions) exported page by page and imported into
// another user's: a dry run reports and writes nothing, the import
// creates the live entries and keeps the archived one archived, skips the
// deleted one, and a second import (even under a new command id) changes
// nothing. Export pages are bounded by limit.
func TestNamespaceExportImport(t *testing.T) {
	clk := newTestClock()
	_, nc := node.StartForTest(t, func(c *node.Config) { c.Now = clk.now })
	c := client.New(nc)
	ctx := context.Background()
	src, dst := client.User("alice"), client.User("bob")
	for _, p := range []*memoryv1.PutEntryRequest{{Key: "a", Value: []byte("v1")}, {Key: "a", Value: []byte("v2")},
		episodic("ep", "old episode"), {Key: "gone", Value: []byte("x")}, {Key: "z", Value: []byte("zz"), Importance: 0.5}} {
		if _, err := c.Put(ctx, src, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteEntry(ctx, src, &memoryv1.DeleteEntryRequest{Key: "gone"}); err != nil {
		t.Fatal(err)
	}
	clk.advance(10 * 24 * time.Hour)
	if _, err := c.Archive(ctx, src, &memoryv1.ArchiveEntriesRequest{OlderThanDays: 5}); err != nil {
		t.Fatal(err)
	}
	var keys []*memoryv1.KeyHistory
	pages := 0
	token := ""
	for {
		rep, err := c.ExportPage(ctx, src, &memoryv1.ExportEntriesRequest{Limit: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if rep.GetScope() != "user:alice" || len(rep.GetKeys()) > 2 {
			t.Fatalf("page: %v", rep)
		}
		pages++
		keys = append(keys, rep.GetKeys()...)
		if token = rep.GetNextPageToken(); token == "" {
			break
		}
	}
	if pages != 2 || len(keys) != 4 || len(keys[0].GetVersions()) != 2 || string(keys[0].GetVersions()[0].GetValue()) != "v1" {
		t.Fatalf("export: %d pages, %v", pages, keys)
	}
	if _, err := c.ExportPage(ctx, src, &memoryv1.ExportEntriesRequest{Limit: 201}); client.Code(err) != 400 {
		t.Errorf("export limit 201: %v, want 400", err)
	}

	dry, err := c.Import(ctx, dst, &memoryv1.ImportEntriesRequest{Keys: keys, DryRun: true})
	if err != nil || dry.GetChanged() != 3 || dry.GetUnchanged() != 1 || actionsOf(dry) != "a:create,ep:create,gone:skip,z:create" {
		t.Fatalf("dry run: %v, %v", dry, err)
	}
	if l, _ := c.ListEntries(ctx, dst, &memoryv1.ListEntriesRequest{IncludeDeleted: true}); len(l.GetEntries()) != 0 {
		t.Fatalf("the dry run wrote %v", l.GetEntries())
	}
	imp, err := c.Import(ctx, dst, &memoryv1.ImportEntriesRequest{Keys: keys})
	if err != nil || imp.GetChanged() != 3 || imp.GetResult().GetDuplicate() {
		t.Fatalf("import: %v, %v", imp, err)
	}
	if e, err := c.GetEntry(ctx, dst, "a", 0); err != nil || string(e.GetValue()) != "v2" || e.GetChange() != memoryv1.ChangeKind_CHANGE_KIND_IMPORT {
		t.Fatalf("imported a: %v, %v", e, err)
	}
	if e, err := c.GetEntry(ctx, dst, "z", 0); err != nil || e.GetImportance() != 0.5 {
		t.Fatalf("imported z: %v, %v", e, err)
	}
	if l, _ := c.ListEntries(ctx, dst, &memoryv1.ListEntriesRequest{Archived: true}); keysOf(l.GetEntries()) != "ep" {
		t.Fatalf("archived in the target: %v", keysOf(l.GetEntries()))
	}
	// The same import again: the derived command id answers a duplicate;
	// under a new command id every key is unchanged.
	again, err := c.Import(ctx, dst, &memoryv1.ImportEntriesRequest{Keys: keys})
	if err != nil || !again.GetResult().GetDuplicate() || again.GetChanged() != 0 {
		t.Fatalf("re-import: %v, %v", again, err)
	}
	seq := c.LastWriteSeq()
	fresh, err := c.Import(ctx, dst, &memoryv1.ImportEntriesRequest{CommandId: "another", Keys: keys})
	if err != nil || fresh.GetChanged() != 0 || fresh.GetUnchanged() != 4 || fresh.GetResult().GetSeq() > seq {
		t.Fatalf("re-import under a new id: %v, %v", fresh, err)
	}
	// Restoring the archived entry in the target, then importing again,
	// archives it as the export says.
	if _, err := c.Restore(ctx, dst, &memoryv1.RestoreEntryRequest{Key: "ep"}); err != nil {
		t.Fatal(err)
	}
	back, err := c.Import(ctx, dst, &memoryv1.ImportEntriesRequest{CommandId: "third", Keys: keys})
	if err != nil || actionsOf(back) != "a:unchanged,ep:archive,gone:skip,z:unchanged" {
		t.Fatalf("import over a restored entry: %v, %v", back, err)
	}
	// Field and reason of a bad import.
	bad := []*memoryv1.KeyHistory{proto.CloneOf(keys[0]), proto.CloneOf(keys[0])}
	if _, err := c.Import(ctx, dst, &memoryv1.ImportEntriesRequest{Keys: bad}); client.Code(err) != 400 || !bytes.Contains([]byte(err.Error()), []byte("keys[1]")) {
		t.Errorf("import of a key twice: %v, want 400 on keys[1]", err)
	}
	if _, err := c.Import(ctx, dst, &memoryv1.ImportEntriesRequest{}); client.Code(err) != 400 {
		t.Errorf("empty import: %v, want 400 on keys", err)
	}
}

// contextHas reports whether session id's context holds text.
func contextHas(t *testing.T, c *client.Client, id, text string) bool {
	t.Helper()
	rep, err := c.Context(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := protojson.Marshal(rep)
	return bytes.Contains(b, []byte(text))
}

func keysOf(es []*memoryv1.Entry) string {
	var b bytes.Buffer
	for i, e := range es {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e.GetKey())
	}
	return b.String()
}

func actionsOf(r *memoryv1.ImportEntriesReply) string {
	var b bytes.Buffer
	for i, ch := range r.GetChanges() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ch.GetKey() + ":" + ch.GetAction())
	}
	return b.String()
}

// TestNamespaceImportKeepsErasureSources: an entry learned from user alice
// (its metadata names her as its source), exported from her scope and
// imported into project p1, archived there, is still hers: erasing alice
// removes the imported copy, archived value included.
func TestNamespaceImportKeepsErasureSources(t *testing.T) {
	clk := newTestClock()
	_, nc := node.StartForTest(t, func(c *node.Config) { c.Now = clk.now })
	c := client.New(nc)
	ctx := context.Background()
	alice, proj := client.User("alice"), client.Project("p1")
	if _, err := c.Put(ctx, alice, &memoryv1.PutEntryRequest{Key: "fact", Value: []byte("alice is allergic to nuts"),
		MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, Metadata: map[string]string{"agentmem.source_user": "alice"}}); err != nil {
		t.Fatal(err)
	}
	exp, err := c.ExportPage(ctx, alice, &memoryv1.ExportEntriesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Import(ctx, proj, &memoryv1.ImportEntriesRequest{Keys: exp.GetKeys()}); err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * 24 * time.Hour)
	if a, err := c.Archive(ctx, proj, &memoryv1.ArchiveEntriesRequest{OlderThanDays: 1}); err != nil || len(a.GetKeys()) != 1 {
		t.Fatalf("archive: %v, %v", a, err)
	}
	if _, err := c.EraseUser(ctx, "alice", "test"); err != nil {
		t.Fatal(err)
	}
	if h, err := c.History(ctx, proj, "fact"); client.Code(err) != 404 {
		t.Fatalf("the imported copy survives alice's erasure: %v, %v", h, err)
	}
}
