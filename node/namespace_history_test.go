package node_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/node"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"github.com/agentmem/agentmem/replay"
)

// TestNamespaceImportWritesVersions: an export file (replay's namespace
// export) imported into another user's namespace writes each key's
// versions in order with their metadata: three values of a, the two
// values of b around its deletion, the archived episode as a value then
// its archiving. A dry run reports the versions and writes nothing; the
// same import again (derived or new command id) writes nothing; a later
// export with one new version writes that version only; importing into
// the namespace it came from writes nothing.
func TestNamespaceImportWritesVersions(t *testing.T) {
	clk := newTestClock()
	_, nc := node.StartForTest(t, func(c *node.Config) { c.Now = clk.now })
	c := client.New(nc)
	ctx := context.Background()
	alice, bob := client.User("alice"), client.User("bob")
	put := func(p *memoryv1.PutEntryRequest) {
		t.Helper()
		if _, err := c.Put(ctx, alice, p); err != nil {
			t.Fatal(err)
		}
	}
	put(&memoryv1.PutEntryRequest{Key: "a", Value: []byte("a1"), Tags: []string{"first"}})
	put(&memoryv1.PutEntryRequest{Key: "a", Value: []byte("a2"), Importance: 0.3, Metadata: map[string]string{"m": "1"}})
	put(&memoryv1.PutEntryRequest{Key: "a", Value: []byte("a3"), Tags: []string{"third"}})
	put(&memoryv1.PutEntryRequest{Key: "b", Value: []byte("b1")})
	if _, err := c.DeleteEntry(ctx, alice, &memoryv1.DeleteEntryRequest{Key: "b"}); err != nil {
		t.Fatal(err)
	}
	put(&memoryv1.PutEntryRequest{Key: "b", Value: []byte("b2")})
	put(episodic("ep", "the trip"))
	clk.advance(10 * 24 * time.Hour)
	if _, err := c.Archive(ctx, alice, &memoryv1.ArchiveEntriesRequest{OlderThanDays: 5}); err != nil {
		t.Fatal(err)
	}
	export := func() []*memoryv1.KeyHistory {
		t.Helper()
		var buf bytes.Buffer
		if _, err := replay.NamespaceExport(ctx, c, alice, "", false, 0, &buf); err != nil {
			t.Fatal(err)
		}
		_, keys, err := replay.ReadNamespaceFile(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	keys := export()
	versionsOf := func(r *memoryv1.ImportEntriesReply) string {
		var parts []string
		for _, ch := range r.GetChanges() {
			parts = append(parts, fmt.Sprintf("%s:%s:%d", ch.GetKey(), ch.GetAction(), ch.GetVersions()))
		}
		return strings.Join(parts, ",")
	}
	dry, err := replay.NamespaceImport(ctx, c, bob, keys, true)
	if err != nil || dry.GetVersions() != 7 || versionsOf(dry) != "a:create:3,b:create:2,ep:create:2" {
		t.Fatalf("dry run: %v (%s), %v", dry, versionsOf(dry), err)
	}
	if h, err := c.History(ctx, bob, "a"); client.Code(err) != 404 {
		t.Fatalf("the dry run wrote %v, %v", h, err)
	}
	imp, err := replay.NamespaceImport(ctx, c, bob, keys, false)
	if err != nil || imp.GetVersions() != 7 || imp.GetChanged() != 3 {
		t.Fatalf("import: %v, %v", imp, err)
	}
	history := func(key string) string {
		t.Helper()
		h, err := c.History(ctx, bob, key)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, e := range h {
			state := "live"
			if e.GetDeleted() {
				state = strings.ToLower(strings.TrimPrefix(e.GetChange().String(), "CHANGE_KIND_"))
			}
			parts = append(parts, fmt.Sprintf("%s/%s/%v/%v/%v", e.GetValue(), state, e.GetTags(), e.GetImportance(), e.GetMetadata()))
		}
		return strings.Join(parts, " ")
	}
	if got, want := history("a"), "a1/live/[first]/0/map[] a2/live/[]/0.3/map[m:1] a3/live/[third]/0/map[]"; got != want {
		t.Fatalf("bob's a:\n got %s\nwant %s", got, want)
	}
	if got, want := history("b"), "b1/live/[]/0/map[] b2/live/[]/0/map[]"; got != want {
		t.Fatalf("bob's b:\n got %s\nwant %s", got, want)
	}
	if got, want := history("ep"), "the trip/live/[t]/0/map[src:test] the trip/archive/[t]/0/map[src:test]"; got != want {
		t.Fatalf("bob's ep:\n got %s\nwant %s", got, want)
	}
	seq := c.LastWriteSeq()
	again, err := replay.NamespaceImport(ctx, c, bob, keys, false)
	if err != nil || again.GetChanged() != 0 || again.GetVersions() != 0 {
		t.Fatalf("the same import again: %v, %v", again, err)
	}
	fresh, err := c.Import(ctx, bob, &memoryv1.ImportEntriesRequest{CommandId: "another", Keys: keys})
	if err != nil || fresh.GetChanged() != 0 || fresh.GetVersions() != 0 || fresh.GetResult().GetSeq() > seq {
		t.Fatalf("the same import under a new command id: %v, %v", fresh, err)
	}
	// One new version in the source: the next import writes it alone.
	put(&memoryv1.PutEntryRequest{Key: "a", Value: []byte("a4")})
	next, err := replay.NamespaceImport(ctx, c, bob, export(), false)
	if err != nil || versionsOf(next) != "a:update:1,b:unchanged:0,ep:unchanged:0" {
		t.Fatalf("import of a later export: %s, %v", versionsOf(next), err)
	}
	if got := history("a"); !strings.HasSuffix(got, "a3/live/[third]/0/map[] a4/live/[]/0/map[]") || strings.Count(got, "a1/") != 1 {
		t.Fatalf("bob's a after the later import: %s", got)
	}
	// Into the namespace it came from: its history already ends so.
	self, err := replay.NamespaceImport(ctx, c, alice, export(), false)
	if err != nil || self.GetChanged() != 0 || self.GetVersions() != 0 {
		t.Fatalf("import into the source: %s, %v", versionsOf(self), err)
	}
}
