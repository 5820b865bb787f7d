package projections

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func refIDs(refs []*memoryv1.DataReference) string {
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.GetId()
	}
	return strings.Join(ids, ",")
}

func TestDataRefs(t *testing.T) {
	l := newScopeLog(t)
	for _, id := range []string{"aa01", "aa02", "ab01", "b001"} {
		l.storeData(id, 100)
	}
	l.expireData("aa02")
	s := openTestStore(t)
	mustApply(t, s, l.recs)

	ref, ok, err := s.DataRef("aa01")
	if err != nil || !ok || ref.GetId() != "aa01" || ref.GetSize() != 100 || ref.GetContentType() != "application/octet-stream" {
		t.Fatalf("DataRef(aa01) = %v, %v, %v", ref, ok, err)
	}
	if _, ok, err := s.DataRef("aa02"); ok || err != nil {
		t.Fatalf("expired DataRef(aa02) = %v, %v", ok, err)
	}
	if _, ok, err := s.DataRef("zz"); ok || err != nil {
		t.Fatalf("unknown DataRef = %v, %v", ok, err)
	}
	if _, _, err := s.DataRef("a.b"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DataRef(a.b) = %v", err)
	}
	for _, tc := range []struct {
		prefix string
		limit  int
		want   string
	}{
		{"", 0, "aa01,ab01,b001"},
		{"a", 0, "aa01,ab01"},
		{"aa", 0, "aa01"},
		{"", 2, "aa01,ab01"},
		{"c", 0, ""},
	} {
		refs, err := s.DataRefs(tc.prefix, tc.limit)
		if err != nil || refIDs(refs) != tc.want {
			t.Errorf("DataRefs(%q, %d) = %s, %v; want %s", tc.prefix, tc.limit, refIDs(refs), err, tc.want)
		}
	}
	for _, bad := range []int{-1, 101} {
		if _, err := s.DataRefs("", bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("DataRefs limit %d = %v", bad, err)
		}
	}

	// The index survives a restart.
	path := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if refs, err := s2.DataRefs("", 0); err != nil || refIDs(refs) != "aa01,ab01,b001" {
		t.Fatalf("after reopen DataRefs = %s, %v", refIDs(refs), err)
	}
}

// TestRebuildWithScopesAndData runs the projector on a log mixing session,
// scope, data and unknown subjects, then rebuilds the file from the stream:
// same Digest (every bucket), same answers.
func TestRebuildWithScopesAndData(t *testing.T) {
	js, log := testJS(t)
	l := newScopeLog(t)
	l.create("s1", "alice", "a1")
	l.appendMsgs("s1", "deploy failed with a database timeout")
	for i := 0; i < 40; i++ {
		kind, id := "user", "alice"
		if i%3 == 1 {
			kind, id = sessionScopeKind, "s1"
		} else if i%3 == 2 {
			kind, id = "agent", "a1"
		}
		key := fmt.Sprintf("note-%d", i%7)
		evs := []proto.Message{l.put(kind, id, key, fmt.Sprintf("note %d about topic%d and the database", i, i%5), withTags(fmt.Sprintf("t%d", i%2)))}
		if i%9 == 8 {
			evs = append(evs, l.del(kind, id, key))
		}
		if i == 20 {
			evs = append(evs, l.put(kind, id, "big", compressible()))
		}
		l.record(kind, id, evs...)
		if i%10 == 0 {
			l.storeData(fmt.Sprintf("d%02d", i), uint64(i))
		}
		if i == 30 {
			l.expireData("d10")
		}
	}
	l.record("workflow", "w1", &memoryv1.ScopeConfigured{MaxEntries: 5})
	// A record of a kind this projection does not know: skipped by both.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := log.Append(ctx, "mem.ev.unknown.x1", 0, "unknown-1", []byte("not a batch")); err != nil {
		t.Fatal(err)
	}
	last := publish(t, log, l.recs)

	live := openTestStore(t)
	p, err := NewProjector(Config{BatchEvents: 7}, js, live, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runProjector(t, p)
	if err := p.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkEntryIndex(t, live)

	rebuilt := filepath.Join(t.TempDir(), "rebuilt.db")
	stats, err := Rebuild(ctx, js, events.StreamName, rebuilt, testCodec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.LastSeq != last {
		t.Fatalf("rebuild LastSeq = %d, want %d", stats.LastSeq, last)
	}
	rs, err := Open(rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	ld, err := live.Digest()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := rs.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"entries", "entry_versions", "scope_config", "entry_docs", "entry_doc_ids",
		"entry_postings", "entry_terms", "entry_stats", "data_refs"} {
		if _, ok := ld[b]; !ok {
			t.Errorf("Digest misses bucket %s", b)
		}
	}
	if diff := VerifyDigests(ld, rd); diff != nil {
		t.Fatalf("live file differs from a rebuild: %v", diff)
	}
	if live.AppliedSeq() != rs.AppliedSeq() {
		t.Fatalf("checkpoints %d vs %d", live.AppliedSeq(), rs.AppliedSeq())
	}
	// Non-empty read models, same answers.
	for _, st := range []*Store{live, rs} {
		hits, err := st.SearchEntries("user", "alice", &memoryv1.SearchEntriesRequest{Query: "database topic3", Limit: 20})
		if err != nil || len(hits) == 0 {
			t.Fatalf("SearchEntries = %v, %v", entryKeys(hits), err)
		}
		refs, err := st.DataRefs("", 0)
		if err != nil || refIDs(refs) != "d00,d20,d30" {
			t.Fatalf("DataRefs = %s, %v", refIDs(refs), err)
		}
		if e, ok, err := st.Entry("agent", "a1", "big"); err != nil || !ok || e.GetCompressed() || string(e.GetValue()) != compressible() {
			t.Fatalf("Entry(big) = %v, %v", ok, err)
		}
		if cfg, ok, err := st.ScopeConfig("workflow", "w1"); err != nil || !ok || cfg.GetMaxEntries() != 5 {
			t.Fatalf("ScopeConfig = %v, %v, %v", cfg, ok, err)
		}
	}
	a, _ := live.SearchEntries(sessionScopeKind, "s1", &memoryv1.SearchEntriesRequest{Query: "note database"})
	b, _ := rs.SearchEntries(sessionScopeKind, "s1", &memoryv1.SearchEntriesRequest{Query: "note database"})
	if len(a) == 0 || !slices.EqualFunc(a, b, func(x, y *memoryv1.EntryHit) bool {
		return x.GetScore() == y.GetScore() && x.GetEntry().GetKey() == y.GetEntry().GetKey()
	}) {
		t.Fatalf("live and rebuilt searches differ: %v vs %v", entryKeys(a), entryKeys(b))
	}
}
