package sharedmem

import (
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

const day = int64(24 * 3600 * 1e9)

// TestArchiveKeepsValueThroughCompaction: an archived entry is a
// tombstone holding its value (out of Get and List, listed with
// archived); a compaction that drops every older version leaves it
// restorable, with its value (and, episodic, the scope's default TTL from
// the restore: none here).
func TestArchiveKeepsValueThroughCompaction(t *testing.T) {
	s := New(KindUser, "u")
	big := strings.Repeat("an old episode, compressible. ", 100)
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "ep", Value: []byte(big), MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, TtlSeconds: 3600 * 24 * 365}, 1)
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "sem", Value: []byte("x")}, 1)
	now := 40 * day
	evs, keys, more, err := s.DecideArchive(&memoryv1.ArchiveEntriesRequest{OlderThanDays: 30}, "op", env(now))
	if err != nil || len(keys) != 1 || keys[0] != "ep" || more {
		t.Fatalf("archive: %v %v %v", keys, more, err)
	}
	apply(t, s, "c1", evs)
	if _, err := s.Get("ep", 0, now); code(err) != 404 {
		t.Fatalf("get of an archived entry: %v", err)
	}
	l, _, _ := s.List(&memoryv1.ListEntriesRequest{Archived: true}, now)
	if len(l) != 1 || string(l[0].Value) != big {
		t.Fatalf("archived list: %v", l)
	}
	// The compaction keeps only the current version: the tombstone.
	base, dropped := s.Trimmed(now)
	if !dropped {
		t.Fatal("nothing trimmed")
	}
	s2 := FromSnapshot(base)
	evs, err = s2.DecideRestore(&memoryv1.RestoreEntryRequest{Key: "ep"}, "op", env(now))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s2, "c2", evs)
	e, err := s2.Get("ep", 0, now)
	if err != nil || string(e.Value) != big || e.RestoredFrom != 2 || e.ExpiresUnixNano != 0 {
		t.Fatalf("restored: %v, %v", e, err)
	}
	wantCode(t, second(s.DecideArchive(&memoryv1.ArchiveEntriesRequest{OlderThanDays: 0}, "op", env(now))), 400, "older_than_days")
	wantCode(t, second(s.DecideArchive(&memoryv1.ArchiveEntriesRequest{OlderThanDays: 1, Limit: 1001}, "op", env(now))), 400, "limit")
}

// TestImportIsIdempotent: importing an export twice writes once; a
// changed value is an update; a deleted key is skipped.
func TestImportIsIdempotent(t *testing.T) {
	src, dst := New(KindUser, "a"), New(KindUser, "b")
	mustPut(t, src, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v"), Tags: []string{"x"}}, 1)
	mustPut(t, src, &memoryv1.PutEntryRequest{Key: "d", Value: []byte("v")}, 1)
	evs, _ := src.DecideDelete(&memoryv1.DeleteEntryRequest{Key: "d"}, "", env(2))
	apply(t, src, "del", evs)
	keys, _, _, err := src.Export(&memoryv1.ExportEntriesRequest{}, 0)
	if err != nil || len(keys) != 2 {
		t.Fatal(keys, err)
	}
	req := &memoryv1.ImportEntriesRequest{Keys: keys}
	evs, changes, err := dst.DecideImport(req, "imp", env(3))
	if err != nil || len(evs) != 1 || changes[0].Action != ImportSkip || changes[1].Action != ImportCreate {
		t.Fatalf("first import: %v %v %v", evs, changes, err)
	}
	apply(t, dst, "i1", evs)
	evs, changes, err = dst.DecideImport(req, "imp", env(4))
	if err != nil || len(evs) != 0 || changes[1].Action != ImportUnchanged {
		t.Fatalf("second import: %v %v %v", evs, changes, err)
	}
	keys[1].Versions[0].Value = []byte("w")
	if _, changes, _ = dst.DecideImport(req, "imp", env(5)); changes[1].Action != ImportUpdate {
		t.Fatalf("changed value: %v", changes)
	}
}

func second[A, B, C any](_ A, _ B, _ C, err error) error { return err }
