package sharedmem

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key    string
		reason string // "" = valid
	}{
		{"a", ""},
		{"user/prefs:theme", ""},
		{"alice@example.com", ""},
		{"a.b-c_d:1/2@3", ""},
		{"9", ""},
		{strings.Repeat("k", 256), ""},
		{"", "must be 1..256 bytes, got 0"},
		{strings.Repeat("k", 257), "must be 1..256 bytes, got 257"},
		{".hidden", "must not start with '.'"},
		{"/abs", "must not start with '/'"},
		{":x", "must not start with ':'"},
		{"a b", "byte 1 (' ') is not one of [A-Za-z0-9_.:/@-]"},
		{"é", "byte 0 (0xC3) is not one of [A-Za-z0-9_.:/@-]"},
		{"a\x00", "byte 1 (0x00) is not one of [A-Za-z0-9_.:/@-]"},
		{"a\xc3\xa9", "byte 1 (0xC3) is not one of [A-Za-z0-9_.:/@-]"},
		{"a*", "byte 1 ('*') is not one of [A-Za-z0-9_.:/@-]"},
	} {
		err := ValidateKey(tc.key)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.key, err)
			}
			continue
		}
		var r *Rejection
		if !errors.As(err, &r) || r.Code != CodeBadRequest || r.Field != "key" || r.Reason != tc.reason {
			t.Errorf("%q: got %#v, want reason %q", tc.key, err, tc.reason)
		}
	}
}

func TestKinds(t *testing.T) {
	for _, k := range Kinds() {
		got, err := ParseKind(string(k))
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
		if k.Elevated() != (k == KindApp || k == KindProject) {
			t.Errorf("%q.Elevated() = %v", k, k.Elevated())
		}
	}
	_, err := ParseKind("team")
	var r *Rejection
	if !errors.As(err, &r) || r.Code != 400 || r.Field != "kind" || !strings.Contains(r.Reason, "agent, global, workflow, swarm, debate, session, user, app, project") {
		t.Fatalf("ParseKind(team) = %v", err)
	}
	for _, tc := range []struct {
		kind   Kind
		id     string
		want   string
		field  string
		reason string
	}{
		{KindGlobal, "global", "global", "", ""},
		{KindGlobal, "", "", "id", "global"},
		{KindGlobal, "other", "", "id", "global"},
		{KindAgent, "a-1_B", "agent:a-1_B", "", ""},
		{KindApp, "billing", "app:billing", "", ""},
		{KindUser, "", "", "id", "1..128"},
		{KindUser, strings.Repeat("u", 129), "", "id", "1..128"},
		{KindSession, "s.1", "", "id", "not one of"},
		{Kind("team"), "x", "", "kind", "unknown kind"},
	} {
		got, err := ScopeID(tc.kind, tc.id)
		if tc.field == "" {
			if err != nil || got != tc.want {
				t.Errorf("ScopeID(%q, %q) = %q, %v", tc.kind, tc.id, got, err)
			}
			continue
		}
		if !errors.As(err, &r) || r.Field != tc.field || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("ScopeID(%q, %q) = %v, want %s: ...%s", tc.kind, tc.id, err, tc.field, tc.reason)
		}
	}
}

func TestCompareAndSet(t *testing.T) {
	s := New(KindGlobal, GlobalID)
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v1"), ExpectedVersion: i64(0)}, t0)
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v2")}, t0)
	for _, tc := range []struct {
		ev     *int64
		code   int
		reason string
	}{
		{i64(0), 409, "expected version 0, current is 2"},
		{i64(1), 409, "expected version 1, current is 2"},
		{i64(3), 409, "expected version 3, current is 2"},
		{i64(-2), 400, ""},
		{i64(2), 0, ""},
		{i64(-1), 0, ""},
		{nil, 0, ""},
	} {
		_, err := s.DecidePut(&memoryv1.PutEntryRequest{Key: "k", Value: []byte("x"), ExpectedVersion: tc.ev}, "u", env(t0))
		if code(err) != tc.code {
			t.Fatalf("expected %v: %v", tc.ev, err)
		}
		var r *Rejection
		if tc.reason != "" && (!errors.As(err, &r) || r.Field != "expected_version" || r.Reason != tc.reason) {
			t.Fatalf("expected %v: %v, want %q", tc.ev, err, tc.reason)
		}
	}
	// A tombstone counts as not existing for 0, and as the current version for N.
	evs, err := s.DecideDelete(&memoryv1.DeleteEntryRequest{Key: "k", ExpectedVersion: i64(2)}, "u", env(t0))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, "", evs)
	if _, err := s.DecideDelete(&memoryv1.DeleteEntryRequest{Key: "k"}, "u", env(t0)); code(err) != 404 {
		t.Fatalf("delete of a tombstone: %v", err)
	}
	e := lastEntry(mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v4"), ExpectedVersion: i64(0)}, t0+5))
	if e.Version != 4 || e.CreatedUnixNano != t0+5 {
		t.Fatalf("put after delete: %v", e)
	}
}

func TestEvictionOrder(t *testing.T) {
	s := New(KindSwarm, "sw")
	put := func(key string, imp float64, now int64) {
		mustPut(t, s, &memoryv1.PutEntryRequest{Key: key, Value: []byte(key), Importance: imp}, now)
	}
	put("important-old", 0.9, t0)
	put("low-new", 0.1, t0+3)
	put("low-old", 0.1, t0+1)
	put("mid", 0.5, t0+2)
	evs, err := s.DecideConfigure(&memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{MaxEntries: 3}}, env(t0+10))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || lastEntry(evs).Key != "low-old" || lastEntry(evs).Change != memoryv1.ChangeKind_CHANGE_KIND_EVICT {
		t.Fatalf("configure: %v", evs)
	}
	apply(t, s, "", evs)
	// A new key evicts the least important (then oldest) other entry, never itself.
	evs = mustPut(t, s, &memoryv1.PutEntryRequest{Key: "zero", Value: []byte("z")}, t0+20)
	if len(evs) != 2 || evs[0].(*memoryv1.EntryChanged).Entry.Key != "low-new" || lastEntry(evs).Key != "zero" {
		t.Fatalf("put: %v", evs)
	}
	// Updating a live key evicts nothing.
	if evs = mustPut(t, s, &memoryv1.PutEntryRequest{Key: "mid", Value: []byte("m2")}, t0+30); len(evs) != 1 {
		t.Fatalf("update: %v", evs)
	}
	if s.Live() != 3 {
		t.Fatalf("Live() = %d", s.Live())
	}
	list, _, _ := s.List(&memoryv1.ListEntriesRequest{}, t0+30)
	var keys []string
	for _, e := range list {
		keys = append(keys, e.Key)
	}
	if strings.Join(keys, ",") != "important-old,mid,zero" {
		t.Fatalf("live keys %v", keys)
	}
}

func TestExpiry(t *testing.T) {
	s := New(KindSession, "s1")
	evs, _ := s.DecideConfigure(&memoryv1.ConfigureScopeRequest{Config: &memoryv1.ScopeConfig{EpisodicTtlSeconds: 60}}, env(t0))
	apply(t, s, "", evs)
	ep := lastEntry(mustPut(t, s, &memoryv1.PutEntryRequest{Key: "ep", Value: []byte("x"), MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC}, t0))
	sem := lastEntry(mustPut(t, s, &memoryv1.PutEntryRequest{Key: "sem", Value: []byte("y")}, t0))
	short := lastEntry(mustPut(t, s, &memoryv1.PutEntryRequest{Key: "short", Value: []byte("z"), TtlSeconds: 10, MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC}, t0))
	if ep.ExpiresUnixNano != t0+60e9 || sem.ExpiresUnixNano != 0 || short.ExpiresUnixNano != t0+10e9 {
		t.Fatalf("expiries %d %d %d", ep.ExpiresUnixNano, sem.ExpiresUnixNano, short.ExpiresUnixNano)
	}
	if s.NextExpiry() != t0+10e9 {
		t.Fatalf("NextExpiry = %d", s.NextExpiry())
	}
	if evs := s.DecideExpire(env(t0 + 10e9 - 1)); len(evs) != 0 {
		t.Fatalf("early expiry: %v", evs)
	}
	// Past its expiry, reads hide the entry before the tombstone is stored.
	if _, err := s.Get("short", 0, t0+10e9); code(err) != 404 {
		t.Fatalf("Get of an expired entry: %v", err)
	}
	if g, err := s.Get("short", 1, t0+10e9); err != nil || g.Deleted {
		t.Fatalf("Get of an expired entry by version: %v %v", g, err)
	}
	if l, _, _ := s.List(&memoryv1.ListEntriesRequest{IncludeDeleted: true}, t0+10e9); len(l) != 2 {
		t.Fatalf("List shows %d entries", len(l))
	}
	evs = s.DecideExpire(env(t0 + 10e9))
	if len(evs) != 1 || lastEntry(evs).Key != "short" || !lastEntry(evs).Deleted || lastEntry(evs).Change != memoryv1.ChangeKind_CHANGE_KIND_EXPIRE {
		t.Fatalf("expire: %v", evs)
	}
	apply(t, s, "", evs)
	if s.NextExpiry() != t0+60e9 || s.Live() != 2 {
		t.Fatalf("NextExpiry = %d, Live = %d", s.NextExpiry(), s.Live())
	}
	// A put at a later time first emits the due tombstones.
	evs = mustPut(t, s, &memoryv1.PutEntryRequest{Key: "new", Value: []byte("n")}, t0+61e9)
	if len(evs) != 2 || evs[0].(*memoryv1.EntryChanged).Entry.Key != "ep" || s.NextExpiry() != 0 {
		t.Fatalf("put after expiry: %v", evs)
	}
}

func TestRollback(t *testing.T) {
	s := New(KindWorkflow, "w")
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("one"), Tags: []string{"t"}}, t0)
	mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("two")}, t0+1)
	evs, _ := s.DecideDelete(&memoryv1.DeleteEntryRequest{Key: "k"}, "u", env(t0+2))
	apply(t, s, "", evs)
	for _, tc := range []struct {
		to    uint64
		code  int
		field string
	}{
		{3, 400, "to_version"}, {0, 400, "to_version"}, {4, 404, "to_version"},
	} {
		_, err := s.DecideRollback(&memoryv1.RollbackEntryRequest{Key: "k", ToVersion: tc.to}, "u", env(t0+3))
		wantCode(t, err, tc.code, tc.field)
	}
	_, err := s.DecideRollback(&memoryv1.RollbackEntryRequest{Key: "nope", ToVersion: 1}, "u", env(t0+3))
	wantCode(t, err, 404, "key")
	evs, err = s.DecideRollback(&memoryv1.RollbackEntryRequest{Key: "k", ToVersion: 1}, "u", env(t0+3))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, "", evs)
	g, err := s.Get("k", 0, t0+3)
	if err != nil || string(g.Value) != "one" || g.Version != 4 || g.RestoredFrom != 1 || g.Change != memoryv1.ChangeKind_CHANGE_KIND_ROLLBACK || g.Tags[0] != "t" || g.CreatedUnixNano != t0+3 {
		t.Fatalf("after rollback: %v %v", g, err)
	}
}

func TestCopyPublishes(t *testing.T) {
	src := New(KindSession, "s1")
	e := lastEntry(mustPut(t, src, &memoryv1.PutEntryRequest{Key: "note", Value: bytes.Repeat([]byte("ab"), 2000), Importance: 0.7}, t0))
	dst := New(KindProject, "p")
	mustPut(t, dst, &memoryv1.PutEntryRequest{Key: "note", Value: []byte("old")}, t0)
	evs, err := dst.DecideCopy(e, "publisher", env(t0+5))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, dst, "", evs)
	g, _ := dst.Get("note", 0, t0+5)
	if g.Version != 2 || g.Change != memoryv1.ChangeKind_CHANGE_KIND_PUBLISH || !bytes.Equal(g.Value, bytes.Repeat([]byte("ab"), 2000)) || g.UpdatedBy != "publisher" || g.Importance != 0.7 {
		t.Fatalf("published: %v", g)
	}
}

func TestApplyRejectsInconsistentBatches(t *testing.T) {
	s := New(KindGlobal, GlobalID)
	evs := mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: []byte("v")}, t0)
	before := marshal(t, s.Snapshot())
	for name, tc := range map[string]struct {
		meta Meta
		evs  []any
	}{
		"same version":  {Meta{Version: 1}, nil},
		"replayed":      {Meta{Version: 2}, []any{evs[0]}},
		"tombstone gap": {Meta{Version: 2}, []any{&memoryv1.EntryChanged{Entry: &memoryv1.Entry{Key: "x", Version: 1, Deleted: true}}}},
		"bad key":       {Meta{Version: 2}, []any{&memoryv1.EntryChanged{Entry: &memoryv1.Entry{Key: "/x", Version: 1}}}},
		"nil entry":     {Meta{Version: 2}, []any{&memoryv1.EntryChanged{}}},
		"unknown":       {Meta{Version: 2}, []any{&memoryv1.KeyHistory{}}},
		"second fails":  {Meta{Version: 2}, []any{&memoryv1.EntryChanged{Entry: &memoryv1.Entry{Key: "n", Version: 1}}, &memoryv1.EntryChanged{Entry: &memoryv1.Entry{Key: "n", Version: 3}}}},
	} {
		var batch = toMessages(tc.evs)
		if err := s.Apply(tc.meta, batch); !errors.Is(err, ErrApply) {
			t.Errorf("%s: %v", name, err)
		}
		if !bytes.Equal(before, marshal(t, s.Snapshot())) {
			t.Fatalf("%s: state changed", name)
		}
	}
}

func TestLookupCommandKeepsTheLast64(t *testing.T) {
	s := New(KindAgent, "a")
	for i := range 70 {
		mustPut(t, s, &memoryv1.PutEntryRequest{CommandId: "c" + string(rune('A'+i)), Key: "k", Value: []byte("v")}, t0)
	}
	if _, ok := s.LookupCommand("cA"); ok {
		t.Fatal("oldest command kept")
	}
	if r, ok := s.LookupCommand("c" + string(rune('A'+69))); !ok || r.Version != 70 {
		t.Fatalf("latest command: %v %v", r, ok)
	}
}

func TestListPagingAndFilters(t *testing.T) {
	s := New(KindUser, "u")
	for _, k := range []string{"a/1", "a/2", "a/3", "b/1"} {
		mustPut(t, s, &memoryv1.PutEntryRequest{Key: k, Value: []byte(k), Tags: []string{k[:1]}}, t0)
	}
	page, tok, err := s.List(&memoryv1.ListEntriesRequest{Prefix: "a/", Limit: 2}, t0)
	if err != nil || len(page) != 2 || tok == "" {
		t.Fatalf("page 1: %v %q %v", page, tok, err)
	}
	page, tok, err = s.List(&memoryv1.ListEntriesRequest{Prefix: "a/", Limit: 2, PageToken: tok}, t0)
	if err != nil || len(page) != 1 || page[0].Key != "a/3" || tok != "" {
		t.Fatalf("page 2: %v %q %v", page, tok, err)
	}
	if l, _, _ := s.List(&memoryv1.ListEntriesRequest{Tags: []string{"b"}}, t0); len(l) != 1 || l[0].Key != "b/1" {
		t.Fatalf("tags: %v", l)
	}
	_, _, err = s.List(&memoryv1.ListEntriesRequest{Limit: 1001}, t0)
	wantCode(t, err, 400, "limit")
	_, _, err = s.List(&memoryv1.ListEntriesRequest{PageToken: "!!"}, t0)
	wantCode(t, err, 400, "page_token")
}

func TestHistoryKeepsMaxVersionsPerKey(t *testing.T) {
	s := New(KindDebate, "d")
	for i := range MaxVersionsPerKey + 5 {
		mustPut(t, s, &memoryv1.PutEntryRequest{Key: "k", Value: []byte{byte(i)}}, t0+int64(i))
	}
	h, err := s.History("k")
	if err != nil || len(h) != MaxVersionsPerKey || h[0].Version != 6 || h[len(h)-1].Version != MaxVersionsPerKey+5 {
		t.Fatalf("history: %d versions, %v", len(h), err)
	}
	if _, err := s.Get("k", 5, t0); code(err) != 404 {
		t.Fatalf("dropped version: %v", err)
	}
	if _, err := s.DecideRollback(&memoryv1.RollbackEntryRequest{Key: "k", ToVersion: 6}, "u", env(t0)); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, s)
	if got := FromSnapshot(s.Snapshot()); !bytes.Equal(marshal(t, got.Snapshot()), marshal(t, s.Snapshot())) {
		t.Fatal("FromSnapshot changed the bytes")
	}
}

// TestInvalidAgentIDNamesAgentID: a bad agent id names agent_id and the
// byte as hex when it is not printable ASCII (no mojibake).
func TestInvalidAgentIDNamesAgentID(t *testing.T) {
	_, err := ScopeID(KindAgent, "éa")
	var r *Rejection
	if !errors.As(err, &r) || r.Field != "agent_id" || !strings.Contains(r.Error(), "byte 0 (0xC3)") {
		t.Fatalf("%v", err)
	}
	_, err = ScopeID(KindUser, "a b")
	if !errors.As(err, &r) || r.Field != "id" || !strings.Contains(r.Error(), `byte 1 (' ')`) {
		t.Fatalf("%v", err)
	}
}
