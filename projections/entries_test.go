package projections

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/largedata"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// scopeLog extends logBuilder with scope and data records, tracking the
// aggregate version per subject and the entry version per scope key.
type scopeLog struct {
	*logBuilder
	keyVer map[string]uint64
	last   map[string]*memoryv1.Entry
}

func newScopeLog(t testing.TB) *scopeLog {
	return &scopeLog{logBuilder: newLogBuilder(t), keyVer: map[string]uint64{}, last: map[string]*memoryv1.Entry{}}
}

// record appends a batch of aggregate kind/id holding evs.
func (l *scopeLog) record(kind, id string, evs ...proto.Message) *memoryv1.EventBatch {
	l.t.Helper()
	anys, err := testCodec.Pack(evs)
	if err != nil {
		l.t.Fatal(err)
	}
	subj := events.ScopeSubject(kind, id)
	l.version[subj]++
	v := l.version[subj]
	b := &memoryv1.EventBatch{
		CommandId:     fmt.Sprintf("%s-%s-c%d", kind, id, v),
		AggregateKind: kind,
		AggregateId:   id,
		Version:       v,
		TimeUnixNano:  baseTime + int64(l.seq+1)*int64(time.Second),
		SchemaVersion: events.SchemaVersion,
		Events:        anys,
	}
	unpacked, err := testCodec.Unpack(b)
	if err != nil {
		l.t.Fatal(err)
	}
	l.seq++
	l.recs = append(l.recs, Decoded{Seq: l.seq, Subject: subj, Batch: b, Events: unpacked})
	return b
}

// put returns the EntryChanged of key's next version in scope kind/id, its
// value in stored form (compressed when sharedmem would); mods adjust it.
func (l *scopeLog) put(kind, id, key, value string, mods ...func(*memoryv1.Entry)) *memoryv1.EntryChanged {
	k := kind + "/" + id + "/" + key
	l.keyVer[k]++
	stored, compressed := sharedmem.EncodeValue([]byte(value))
	e := &memoryv1.Entry{
		Key: key, Value: stored, Compressed: compressed, Size: uint32(len(value)),
		ContentType: "text/plain", MemoryType: memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC,
		Version: l.keyVer[k], CreatedUnixNano: baseTime, CreatedBy: "tester",
		UpdatedUnixNano: baseTime + int64(l.keyVer[k]), UpdatedBy: "tester",
		Change: memoryv1.ChangeKind_CHANGE_KIND_PUT,
	}
	for _, m := range mods {
		m(e)
	}
	l.last[k] = e
	return &memoryv1.EntryChanged{Entry: e}
}

// del returns the tombstone of key's current version.
func (l *scopeLog) del(kind, id, key string) *memoryv1.EntryChanged {
	k := kind + "/" + id + "/" + key
	prev := l.last[k]
	l.keyVer[k]++
	e := &memoryv1.Entry{
		Key: key, ContentType: prev.GetContentType(), MemoryType: prev.GetMemoryType(), Version: l.keyVer[k],
		Deleted: true, CreatedUnixNano: prev.GetCreatedUnixNano(), CreatedBy: prev.GetCreatedBy(),
		UpdatedUnixNano: baseTime + int64(l.keyVer[k]), UpdatedBy: "tester", Tags: prev.GetTags(),
		Change: memoryv1.ChangeKind_CHANGE_KIND_DELETE,
	}
	l.last[k] = e
	return &memoryv1.EntryChanged{Entry: e}
}

func withTags(ts ...string) func(*memoryv1.Entry) { return func(e *memoryv1.Entry) { e.Tags = ts } }

func withMemType(mt memoryv1.MemoryType) func(*memoryv1.Entry) {
	return func(e *memoryv1.Entry) { e.MemoryType = mt }
}

func withContentType(ct string) func(*memoryv1.Entry) {
	return func(e *memoryv1.Entry) { e.ContentType = ct }
}

// storeData / expireData append the two large-data events of id.
func (l *scopeLog) storeData(id string, size uint64) {
	l.record(dataKind, id, &memoryv1.DataStored{Ref: &memoryv1.DataReference{
		Id: id, Size: size, Sha256: strings.Repeat("ab", 32), StoredSize: size, ContentType: "application/octet-stream",
		StoredUnixNano: baseTime, ExpiresUnixNano: baseTime + int64(time.Hour),
	}})
}

func (l *scopeLog) expireData(id string) { l.record(dataKind, id, &memoryv1.DataExpired{Id: id}) }

// compressible is a text of at least 1 KiB that zstd compresses.
func compressible() string {
	var b strings.Builder
	for i := 0; b.Len() < 1500; i++ {
		fmt.Fprintf(&b, "runbook step %d: restart the web server and check the load balancer. ", i%7)
	}
	return b.String()
}

var scopeGoldenCases = []struct {
	name  string
	build func(l *scopeLog)
}{
	{"scope_entries", func(l *scopeLog) {
		l.record("agent", "a1", l.put("agent", "a1", "prefs:theme", "dark mode please", withTags("ui")))
		l.record("global", "global", &memoryv1.ScopeConfigured{MaxEntries: 100, EpisodicTtlSeconds: 3600},
			l.put("global", "global", "customer_id", `{"customer": 42, "error": 3706}`, withContentType("application/json")))
		l.record(sessionScopeKind, "s1", l.put(sessionScopeKind, "s1", "notes", "deploy failed with timeout",
			withMemType(memoryv1.MemoryType_MEMORY_TYPE_EPISODIC)))
		l.other("mem.ev.unknown.x") // not projected
		l.record("agent", "a1", l.put("agent", "a1", "prefs:theme", "light mode now", withTags("ui")),
			l.put("agent", "a1", "avatar.png", "\x89PNG binary", withContentType("image/png"), withTags("picture")))
		l.record(sessionScopeKind, "s1", l.del(sessionScopeKind, "s1", "notes"))
		l.record("project", "p1", l.put("project", "p1", "runbook", compressible()))
	}},
	{"data_refs", func(l *scopeLog) {
		l.storeData("d1", 10)
		l.storeData("d2", 20)
		l.other("mem.ev.unknown.x")
		l.expireData("d1")
		l.storeData("d3", 30)
	}},
}

// checkGolden applies recs in one transaction and one record per
// transaction (each applied twice), checks both give the same file and
// compares its Dump with testdata/<name>.golden (-update rewrites it).
func checkGolden(t *testing.T, name string, recs []Decoded) *Store {
	t.Helper()
	whole := openTestStore(t)
	mustApply(t, whole, recs)
	got := dumpString(t, whole)
	single := openTestStore(t)
	for i := range recs {
		mustApply(t, single, recs[i:i+1])
		mustApply(t, single, recs[:i+1])
	}
	if s := dumpString(t, single); s != got {
		t.Fatalf("one record per batch differs from one batch:\n%s\nvs\n%s", s, got)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return whole
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("read model differs from %s (run with -update if intended):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
	return whole
}

func TestScopeGolden(t *testing.T) {
	for _, tc := range scopeGoldenCases {
		t.Run(tc.name, func(t *testing.T) {
			l := newScopeLog(t)
			tc.build(l)
			s := checkGolden(t, tc.name, l.recs)
			checkEntryIndex(t, s)
		})
	}
}

func TestKindsMatchWriters(t *testing.T) {
	// actors.AggregateKind (not imported: the test stays independent of the
	// actor packages).
	want := map[sharedmem.Kind]string{
		"agent": "agent", "global": "global", "workflow": "workflow", "swarm": "swarm", "debate": "debate",
		"session": "session_scope", "user": "user", "app": "app", "project": "project", "agent_type": "agent_type",
	}
	if len(sharedmem.Kinds()) != len(want) {
		t.Fatalf("sharedmem has %d kinds, the test knows %d", len(sharedmem.Kinds()), len(want))
	}
	for _, k := range sharedmem.Kinds() {
		if got := ScopeLogKind(k); got != want[k] || !projectedKind(got) {
			t.Errorf("ScopeLogKind(%s) = %q, want %q", k, got, want[k])
		}
	}
	if dataKind != largedata.Kind || !projectedKind(dataKind) || !projectedKind(events.KindSession) || projectedKind("unknown") {
		t.Fatalf("projected kinds: data %q vs %q", dataKind, largedata.Kind)
	}
}

// checkEntryIndex verifies the entry index against the entries: every live
// current version with terms has one document of its version, and postings,
// document frequencies and statistics are exactly those of the documents.
func checkEntryIndex(t *testing.T, s *Store) {
	t.Helper()
	err := s.view(func(tx *bolt.Tx) error {
		docIDs := tx.Bucket(bucketEntryDocIDs)
		wantPost := map[string]string{}
		wantDF := map[string]uint64{}
		wantStats := map[string][2]uint64{}
		err := tx.Bucket(bucketEntries).ForEach(func(k, v []byte) error {
			e := new(memoryv1.Entry)
			if err := proto.Unmarshal(v, e); err != nil {
				return err
			}
			value, err := sharedmem.DecodeValue(e)
			if err != nil {
				return err
			}
			_, n := entryTermFreqs(e, value)
			idv := docIDs.Get(k)
			if e.GetDeleted() || n == 0 {
				if idv != nil {
					return fmt.Errorf("%q (deleted=%v) has document %x", k, e.GetDeleted(), idv)
				}
				return nil
			}
			if idv == nil {
				return fmt.Errorf("live %q has no document", k)
			}
			doc, err := parseEntryDocValue(tx.Bucket(bucketEntryDocs).Get(idv), true)
			if err != nil {
				return err
			}
			if doc.version != e.GetVersion() || !bytes.Equal(doc.ref, k) || doc.docLen != n {
				return fmt.Errorf("%q: document %+v for version %d", k, doc, e.GetVersion())
			}
			scope := k[:bytes.LastIndexByte(k, sep)]
			for _, tt := range doc.terms {
				wantPost[string(entryPostingKey(scope, tt.term, beU64(idv)))] = string(entryPostingValue(tt.tf, n))
				wantDF[string(entryTermKey(scope, tt.term))]++
			}
			st := wantStats[string(entryStatsKey(scope))]
			wantStats[string(entryStatsKey(scope))] = [2]uint64{st[0] + 1, st[1] + uint64(n)}
			return nil
		})
		if err != nil {
			return err
		}
		if n := tx.Bucket(bucketEntryDocs).Stats().KeyN; n != docIDs.Stats().KeyN {
			return fmt.Errorf("%d documents, %d doc ids", n, docIDs.Stats().KeyN)
		}
		gotPost := map[string]string{}
		_ = tx.Bucket(bucketEntryPostings).ForEach(func(k, v []byte) error { gotPost[string(k)] = string(v); return nil })
		gotDF := map[string]uint64{}
		_ = tx.Bucket(bucketEntryTerms).ForEach(func(k, v []byte) error { gotDF[string(k)] = beU64(v); return nil })
		gotStats := map[string][2]uint64{}
		_ = tx.Bucket(bucketEntryStats).ForEach(func(k, v []byte) error {
			d, n := parseStatsValue(v)
			gotStats[string(k)] = [2]uint64{d, n}
			return nil
		})
		if fmt.Sprint(gotPost) != fmt.Sprint(wantPost) {
			return fmt.Errorf("postings\n got %q\nwant %q", gotPost, wantPost)
		}
		if fmt.Sprint(gotDF) != fmt.Sprint(wantDF) {
			return fmt.Errorf("terms\n got %v\nwant %v", gotDF, wantDF)
		}
		if fmt.Sprint(gotStats) != fmt.Sprint(wantStats) {
			return fmt.Errorf("stats\n got %v\nwant %v", gotStats, wantStats)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// entryCorpus: two user scopes writing the same keys and words, plus
// filters' material.
func entryCorpus(t *testing.T) (*Store, *scopeLog) {
	t.Helper()
	l := newScopeLog(t)
	ep := withMemType(memoryv1.MemoryType_MEMORY_TYPE_EPISODIC)
	l.record("user", "alice",
		l.put("user", "alice", "incident/db-timeout", "The deploy failed with a database timeout on customer-id 42", withTags("incident")),
		l.put("user", "alice", "incident/payments", "Database timeout again: error: 3706 from the payments database", withTags("incident", "payments"), ep),
		l.put("user", "alice", "people/obrien", "O'Brien owns the payments service",
			withMemType(memoryv1.MemoryType_MEMORY_TYPE_PROCEDURAL)),
		l.put("user", "alice", "lunch", "Lunch is at noon on Friday"),
	)
	l.record("user", "alice",
		l.put("user", "alice", "cjk", "发布失败 数据库超时"),
		l.put("user", "alice", "fire", "🔥 everything is on fire 🔥"),
		l.put("user", "alice", "runbook", compressible(), withTags("ops")),
	)
	// bob: the same key, more of the same words.
	l.record("user", "bob",
		l.put("user", "bob", "incident/db-timeout", "database timeout database timeout database timeout in bob's cluster", withTags("incident")),
		l.put("user", "bob", "incident/payments", "bob's payments database timeout error: 3706", withTags("incident", "payments"), ep),
	)
	// The same scope id under another kind is another scope.
	l.record("project", "alice", l.put("project", "alice", "incident/db-timeout", "database timeout"))
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	return s, l
}

func entryKeys(hits []*memoryv1.EntryHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.GetEntry().GetKey()
	}
	return out
}

func searchKeys(t *testing.T, s *Store, kind, id string, req *memoryv1.SearchEntriesRequest) []string {
	t.Helper()
	hits, err := s.SearchEntries(kind, id, req)
	if err != nil {
		t.Fatalf("SearchEntries(%s/%s, %v) = %v", kind, id, req, err)
	}
	for i, h := range hits {
		if h.GetScore() <= 0 || (i > 0 && h.GetScore() > hits[i-1].GetScore()) {
			t.Fatalf("SearchEntries(%v): bad scores %v", req, hits)
		}
	}
	return entryKeys(hits)
}

func TestSearchEntriesRanking(t *testing.T) {
	s, _ := entryCorpus(t)
	checkEntryIndex(t, s)
	q := func(query string) *memoryv1.SearchEntriesRequest { return &memoryv1.SearchEntriesRequest{Query: query} }
	for _, tc := range []struct {
		kind, id string
		req      *memoryv1.SearchEntriesRequest
		want     string
	}{
		{"user", "alice", q("database timeout"), "incident/payments,incident/db-timeout"},
		{"user", "bob", q("database timeout"), "incident/db-timeout,incident/payments"},
		{"project", "alice", q("database timeout"), "incident/db-timeout"},
		{"user", "carol", q("database timeout"), ""},
		{"user", "alice", q("bob's cluster"), ""},
		{"user", "alice", q("payments"), "incident/payments,people/obrien"},
		// Key terms: whole key and its parts.
		{"user", "alice", q("obrien"), "people/obrien"},
		{"user", "alice", q("incident/payments"), "incident/payments,incident/db-timeout,people/obrien"},
		// Tags are indexed.
		{"user", "alice", q("ops"), "runbook"},
		// The compressed value is indexed from its original bytes.
		{"user", "alice", q("load balancer"), "runbook"},
		// Filters.
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "database timeout", MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC}, "incident/payments"},
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "database timeout", MemoryType: memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC}, "incident/db-timeout"},
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "payments", MemoryType: memoryv1.MemoryType_MEMORY_TYPE_PROCEDURAL}, "people/obrien"},
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "database timeout", Tags: []string{"incident"}}, "incident/payments,incident/db-timeout"},
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "database timeout", Tags: []string{"payments", "incident"}}, "incident/payments"},
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "database timeout", Tags: []string{"incident", "nope"}}, ""},
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "database timeout", Limit: 1}, "incident/payments"},
	} {
		if got := strings.Join(searchKeys(t, s, tc.kind, tc.id, tc.req), ","); got != tc.want {
			t.Errorf("SearchEntries(%s/%s, %v) = %q, want %q", tc.kind, tc.id, tc.req, got, tc.want)
		}
	}
	for _, tc := range []struct {
		kind, id string
		req      *memoryv1.SearchEntriesRequest
		field    string
	}{
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "x", Limit: 21}, "limit"},
		{"user", "alice", &memoryv1.SearchEntriesRequest{Query: "x", MemoryType: 9}, "memory_type"},
		{"session", "s1", &memoryv1.SearchEntriesRequest{Query: "x"}, "kind"},
		{"data", "d1", &memoryv1.SearchEntriesRequest{Query: "x"}, "kind"},
		{"user", "al\x00ice", &memoryv1.SearchEntriesRequest{Query: "x"}, "scope_id"},
		{"user", "", &memoryv1.SearchEntriesRequest{Query: "x"}, "scope_id"},
	} {
		_, err := s.SearchEntries(tc.kind, tc.id, tc.req)
		var ae *ArgumentError
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("SearchEntries(%q/%q, %v) = %v, want an ArgumentError on %s", tc.kind, tc.id, tc.req, err, tc.field)
		}
	}
}

func TestSearchEntriesHostileQueries(t *testing.T) {
	s, _ := entryCorpus(t)
	for _, tc := range []struct {
		q    string
		want string // expected top hit in alice's scope ("" = any, possibly none)
	}{
		{"customer-id error", ""},
		{"O'Brien", "people/obrien"},
		{"error: 3706", "incident/payments"},
		{"what broke?", ""},
		{`"unbalanced`, ""},
		{"*", ""},
		{"AND OR NOT", ""},
		{"🔥", ""},
		{"fire 🔥", "fire"},
		{"数据库", "cjk"},
		{"", ""},
		{"   \t\n", ""},
		{"\x00\xff\xfe", ""},
		{"a\x00b", ""},
		{strings.Repeat("x", 10_000), ""},
		{"customer-id", "incident/db-timeout"},
	} {
		for _, scope := range [][2]string{{"user", "alice"}, {"user", "bob"}, {"user", "nobody"}} {
			hits, err := s.SearchEntries(scope[0], scope[1], &memoryv1.SearchEntriesRequest{Query: tc.q})
			if err != nil {
				t.Errorf("SearchEntries(%s, %q) = %v", scope, tc.q, err)
				continue
			}
			if scope[1] == "alice" && tc.want != "" && (len(hits) == 0 || hits[0].GetEntry().GetKey() != tc.want) {
				t.Errorf("SearchEntries(%q) = %v, want top %s", tc.q, entryKeys(hits), tc.want)
			}
		}
	}
}

func TestSearchEntriesIsolation(t *testing.T) {
	s, _ := entryCorpus(t)
	// Every scope sees only its own entries, whatever the words.
	for _, scope := range [][2]string{{"user", "alice"}, {"user", "bob"}, {"project", "alice"}} {
		hits, err := s.SearchEntries(scope[0], scope[1], &memoryv1.SearchEntriesRequest{Query: "database timeout incident payments bob cluster", Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			e, ok, err := s.Entry(scope[0], scope[1], h.GetEntry().GetKey())
			if err != nil || !ok || !proto.Equal(e, h.GetEntry()) {
				t.Fatalf("%v: hit %v is not this scope's entry (%v, %v, %v)", scope, h.GetEntry(), e, ok, err)
			}
			if strings.Contains(string(h.GetEntry().GetValue()), "bob") != (scope[1] == "bob") {
				t.Fatalf("%v: hit from another scope: %q", scope, h.GetEntry().GetValue())
			}
		}
	}
}

func TestSearchEntriesCompressedValue(t *testing.T) {
	s, _ := entryCorpus(t)
	orig := compressible()
	// Stored compressed...
	err := s.view(func(tx *bolt.Tx) error {
		e := new(memoryv1.Entry)
		if err := proto.Unmarshal(tx.Bucket(bucketEntries).Get(entryKey("user", "alice", "runbook")), e); err != nil {
			return err
		}
		if !e.GetCompressed() || len(e.GetValue()) >= len(orig) || e.GetSize() != uint32(len(orig)) {
			return fmt.Errorf("stored entry: compressed=%v %d bytes of %d", e.GetCompressed(), len(e.GetValue()), len(orig))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// ...returned original.
	hits, err := s.SearchEntries("user", "alice", &memoryv1.SearchEntriesRequest{Query: "restart web server"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits = %v, %v", entryKeys(hits), err)
	}
	if e := hits[0].GetEntry(); e.GetCompressed() || string(e.GetValue()) != orig || e.GetSize() != uint32(len(orig)) {
		t.Fatalf("hit entry compressed=%v value %d bytes", e.GetCompressed(), len(e.GetValue()))
	}
	e, ok, err := s.Entry("user", "alice", "runbook")
	if err != nil || !ok || e.GetCompressed() || string(e.GetValue()) != orig {
		t.Fatalf("Entry = %v, %v", ok, err)
	}
}

func TestEntryHistoryAndTombstones(t *testing.T) {
	s, l := entryCorpus(t)
	base := len(l.recs)
	l.record("user", "alice", l.put("user", "alice", "lunch", "Dinner is at eight on Saturday"))
	l.record("user", "alice", l.del("user", "alice", "lunch"), l.del("user", "alice", "fire"))
	l.record("user", "alice", l.put("user", "alice", "lunch", "Brunch on Sunday", withTags("food")))
	mustApply(t, s, l.recs[base:])
	checkEntryIndex(t, s)

	hist, err := s.EntryHistory("user", "alice", "lunch")
	if err != nil || len(hist) != 4 {
		t.Fatalf("EntryHistory = %v, %v", hist, err)
	}
	for i, e := range hist {
		if e.GetVersion() != uint64(i+1) || e.GetDeleted() != (i == 2) {
			t.Fatalf("version %d: %v", i+1, e)
		}
	}
	if string(hist[0].GetValue()) != "Lunch is at noon on Friday" || string(hist[3].GetValue()) != "Brunch on Sunday" {
		t.Fatalf("history values %q, %q", hist[0].GetValue(), hist[3].GetValue())
	}
	if e, ok, err := s.Entry("user", "alice", "lunch"); err != nil || !ok || e.GetVersion() != 4 || e.GetDeleted() {
		t.Fatalf("Entry(lunch) = %v, %v, %v", e, ok, err)
	}
	if e, ok, err := s.Entry("user", "alice", "fire"); err != nil || !ok || !e.GetDeleted() || e.GetVersion() != 2 {
		t.Fatalf("Entry(fire) = %v, %v, %v", e, ok, err)
	}
	if _, ok, err := s.Entry("user", "alice", "ghost"); ok || err != nil {
		t.Fatalf("Entry(ghost) = %v, %v", ok, err)
	}
	if h, err := s.EntryHistory("user", "bob", "lunch"); err != nil || len(h) != 0 {
		t.Fatalf("EntryHistory(bob) = %v, %v", h, err)
	}
	if _, _, err := s.Entry("user", "alice", "bad key"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Entry(bad key) = %v", err)
	}
	q := func(query string) string {
		return strings.Join(searchKeys(t, s, "user", "alice", &memoryv1.SearchEntriesRequest{Query: query}), ",")
	}
	for query, want := range map[string]string{
		"noon friday":    "", // version 1's words are gone
		"dinner":         "", // version 2 was deleted
		"brunch":         "lunch",
		"food":           "lunch",
		"fire":           "", // tombstone: out of the index
		"everything":     "",
		"timeout 3706":   "incident/payments,incident/db-timeout",
		"restart server": "runbook",
	} {
		if got := q(query); got != want {
			t.Errorf("after updates, search %q = %q, want %q", query, got, want)
		}
	}

	// Deleting every entry of a scope empties its index.
	l2 := newScopeLog(t)
	l2.record("swarm", "w1", l2.put("swarm", "w1", "k1", "alpha beta"), l2.put("swarm", "w1", "k2", "beta gamma"))
	l2.record("swarm", "w1", l2.del("swarm", "w1", "k1"), l2.del("swarm", "w1", "k2"))
	s2 := openTestStore(t)
	mustApply(t, s2, l2.recs)
	checkEntryIndex(t, s2)
	_ = s2.view(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketEntryDocs, bucketEntryDocIDs, bucketEntryPostings, bucketEntryTerms, bucketEntryStats} {
			if n := tx.Bucket(b).Stats().KeyN; n != 0 {
				t.Errorf("%s holds %d keys after every entry was deleted", b, n)
			}
		}
		return nil
	})
}

func TestSearchEntriesExpiry(t *testing.T) {
	l := newScopeLog(t)
	l.record("app", "shop",
		l.put("app", "shop", "old", "expiring promo code", func(e *memoryv1.Entry) { e.ExpiresUnixNano = baseTime }),
		l.put("app", "shop", "new", "current promo code", func(e *memoryv1.Entry) { e.ExpiresUnixNano = baseTime + int64(time.Hour) }))
	s := openTestStore(t)
	mustApply(t, s, l.recs)
	defer func(f func() time.Time) { searchNow = f }(searchNow)
	searchNow = func() time.Time { return time.Unix(0, baseTime+1) }
	if got := searchKeys(t, s, "app", "shop", &memoryv1.SearchEntriesRequest{Query: "promo"}); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("expired entry returned: %v", got)
	}
	searchNow = func() time.Time { return time.Unix(0, baseTime-1) }
	if got := searchKeys(t, s, "app", "shop", &memoryv1.SearchEntriesRequest{Query: "promo"}); len(got) != 2 {
		t.Fatalf("before expiry: %v", got)
	}
}

func TestApplyScopeRejects(t *testing.T) {
	corrupt := func(e *memoryv1.Entry) { e.Value, e.Compressed, e.Size = []byte("not zstd at all"), true, 3000 }
	cases := []struct {
		name  string
		build func(l *scopeLog)
		want  error
	}{
		{"unknown event type", func(l *scopeLog) {
			l.record("user", "u1", &memoryv1.SessionCreated{SessionId: "x"})
		}, events.ErrUnknownEventType},
		{"unknown data event", func(l *scopeLog) {
			l.record(dataKind, "d1", &memoryv1.EntryChanged{})
		}, events.ErrUnknownEventType},
		{"version gap", func(l *scopeLog) {
			l.keyVer["user/u1/k"] = 1
			l.record("user", "u1", l.put("user", "u1", "k", "v"))
		}, ErrApply},
		{"same version twice", func(l *scopeLog) {
			l.record("user", "u1", l.put("user", "u1", "k", "v"))
			l.keyVer["user/u1/k"] = 0
			l.record("user", "u1", l.put("user", "u1", "k", "v"))
		}, ErrApply},
		{"tombstone of a tombstone", func(l *scopeLog) {
			l.record("user", "u1", l.put("user", "u1", "k", "v"))
			l.record("user", "u1", l.del("user", "u1", "k"))
			l.record("user", "u1", l.del("user", "u1", "k"))
		}, ErrApply},
		{"invalid key", func(l *scopeLog) { l.record("user", "u1", l.put("user", "u1", "a\x00b", "v")) }, ErrApply},
		{"no entry", func(l *scopeLog) { l.record("user", "u1", &memoryv1.EntryChanged{}) }, ErrApply},
		{"corrupt value", func(l *scopeLog) { l.record("user", "u1", l.put("user", "u1", "k", "v", corrupt)) }, sharedmem.ErrCorruptValue},
		{"wrong aggregate", func(l *scopeLog) {
			b := l.record("user", "u1", l.put("user", "u1", "k", "v"))
			b.AggregateId = "u2"
		}, events.ErrMalformed},
		{"wrong aggregate kind", func(l *scopeLog) {
			b := l.record("user", "u1", l.put("user", "u1", "k", "v"))
			b.AggregateKind = "app"
		}, events.ErrMalformed},
		{"no batch", func(l *scopeLog) { l.other("mem.ev.user.u1") }, events.ErrMalformed},
		{"data stored twice", func(l *scopeLog) { l.storeData("d1", 1); l.storeData("d1", 1) }, ErrApply},
		{"data expired unknown", func(l *scopeLog) { l.expireData("d1") }, ErrApply},
		{"data of another id", func(l *scopeLog) {
			l.record(dataKind, "d1", &memoryv1.DataStored{Ref: &memoryv1.DataReference{Id: "d2"}})
		}, ErrApply},
		{"data without ref", func(l *scopeLog) { l.record(dataKind, "d1", &memoryv1.DataStored{}) }, ErrApply},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newScopeLog(t)
			tc.build(l)
			s := openTestStore(t)
			err := s.ApplyBatch(l.recs)
			var ae *ApplyError
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrApply) || !errors.As(err, &ae) || ae.Seq != l.seq {
				t.Fatalf("ApplyBatch = %v, want %v at seq %d", err, tc.want, l.seq)
			}
			if s.AppliedSeq() != 0 {
				t.Fatalf("nothing must be committed, checkpoint %d", s.AppliedSeq())
			}
			if _, ok, _ := s.Entry("user", "u1", "k"); ok {
				t.Fatal("partial effect committed")
			}
			if _, ok, _ := s.DataRef("d1"); ok {
				t.Fatal("partial effect committed")
			}
		})
	}
}
