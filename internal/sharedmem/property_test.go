package sharedmem

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

var (
	propKeys     = []string{"a", "b", "c", "d/x", "e:1", "f@g", ".bad"}
	bigRepeat    = bytes.Repeat([]byte("the same words again "), 100)
	bigRandom    = randomBytes(1500, 7)
	propValues   = [][]byte{nil, []byte("v1"), []byte("value two"), bigRepeat, bigRandom}
	propImp      = []float64{0, 0.25, 0.5, 1, 1.5}
	propTags     = [][]string{nil, {"x"}, {"y"}, {"x", "y"}}
	propMetadata = []map[string]string{nil, {"m": "1"}}
)

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func drawExpected(t *rapid.T, cur uint64) *int64 {
	switch rapid.IntRange(0, 6).Draw(t, "ev") {
	case 0, 1:
		return nil
	case 2:
		return i64(-1)
	case 3:
		return i64(0)
	case 4:
		return i64(int64(cur))
	case 5:
		return i64(int64(cur) + int64(rapid.IntRange(-1, 1).Draw(t, "ev_off")))
	}
	return i64(-2)
}

func TestPropertyAgainstReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := New(KindProject, "p1")
		m := &ref{keys: map[string][]*memoryv1.Entry{}}
		now := t0
		type stored struct {
			meta Meta
			evs  []proto.Message
		}
		var log []stored
		n := rapid.IntRange(1, 60).Draw(t, "commands")
		for i := range n {
			before := marshal(t, s.Snapshot())
			key := rapid.SampledFrom(propKeys).Draw(t, "key")
			var cur uint64
			if c := m.cur(key); c != nil {
				cur = c.Version
			}
			by := rapid.SampledFrom([]string{"u1", "u2"}).Draw(t, "by")
			var (
				evs  []proto.Message
				err  error
				want int
				next *ref
			)
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); op {
			case 0, 1, 2:
				req := &memoryv1.PutEntryRequest{
					Key: key, Value: rapid.SampledFrom(propValues).Draw(t, "value"), ContentType: "text/plain",
					MemoryType:      memoryv1.MemoryType(rapid.IntRange(0, 3).Draw(t, "mt")),
					ExpectedVersion: drawExpected(t, cur), TtlSeconds: int64(rapid.SampledFrom([]int{0, 0, 1, 3, -1}).Draw(t, "ttl")),
					Importance: rapid.SampledFrom(propImp).Draw(t, "imp"), Tags: rapid.SampledFrom(propTags).Draw(t, "tags"),
					Metadata: rapid.SampledFrom(propMetadata).Draw(t, "md"),
				}
				evs, err = s.DecidePut(req, by, env(now))
				want, next = m.put(req, by, now)
			case 3:
				req := &memoryv1.DeleteEntryRequest{Key: key, ExpectedVersion: drawExpected(t, cur)}
				evs, err = s.DecideDelete(req, by, env(now))
				want, next = m.del(req, by, now)
			case 4:
				req := &memoryv1.RollbackEntryRequest{Key: key, ToVersion: uint64(rapid.IntRange(0, int(cur)+1).Draw(t, "to")), ExpectedVersion: drawExpected(t, cur)}
				evs, err = s.DecideRollback(req, by, env(now))
				want, next = m.rollback(req, by, now)
			case 5:
				if !refKey.MatchString(key) {
					continue
				}
				plain := rapid.SampledFrom(propValues).Draw(t, "value")
				v, c := EncodeValue(plain)
				src := &memoryv1.Entry{Key: key, Value: v, Compressed: c, Size: uint32(len(plain)), ContentType: "text/markdown",
					MemoryType: memoryv1.MemoryType(rapid.IntRange(1, 3).Draw(t, "mt")), Version: 9,
					Deleted:         rapid.IntRange(0, 5).Draw(t, "src_deleted") == 0,
					ExpiresUnixNano: rapid.SampledFrom([]int64{0, 0, now - 1, now + 2e9}).Draw(t, "src_exp"),
					Importance:      rapid.SampledFrom(propImp[:4]).Draw(t, "imp"), Tags: []string{"pub"}}
				if src.Deleted {
					src.Value, src.Size, src.Compressed = nil, 0, false
				}
				evs, err = s.DecideCopy(src, by, env(now))
				want, next = m.copyFrom(src, plain, by, now)
			case 6:
				cfg := &memoryv1.ScopeConfig{MaxEntries: uint32(rapid.IntRange(0, 4).Draw(t, "max")), EpisodicTtlSeconds: int64(rapid.IntRange(0, 3).Draw(t, "ettl"))}
				evs, err = s.DecideConfigure(&memoryv1.ConfigureScopeRequest{Config: cfg}, env(now))
				next = m.configure(cfg, now)
			case 7:
				evs = s.DecideExpire(env(now))
				next = m.clone()
				next.expire(now)
			default:
				now += rapid.Int64Range(0, 3e9).Draw(t, "step")
				continue
			}
			if got := code(err); got != want {
				t.Fatalf("command %d: got %v (code %d), want code %d", i, err, got, want)
			}
			if !bytes.Equal(before, marshal(t, s.Snapshot())) {
				t.Fatalf("command %d: Decide changed the state", i)
			}
			if err != nil || len(evs) == 0 {
				m = next
				continue
			}
			meta := Meta{CommandID: fmt.Sprintf("c%d", i), Version: s.Version() + 1, Seq: s.LastSeq() + 3, TimeUnixNano: now}
			if err := s.Apply(meta, evs); err != nil {
				t.Fatalf("command %d: %v", i, err)
			}
			log = append(log, stored{meta, roundTrip(t, evs)})
			replica := FromSnapshot(unmarshalSnapshot(t, before))
			if err := replica.Apply(meta, log[len(log)-1].evs); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(marshal(t, replica.Snapshot()), marshal(t, s.Snapshot())) {
				t.Fatalf("command %d: replay from the snapshot differs", i)
			}
			m = next
			compare(t, s, m, now)
		}
		replay := New(KindProject, "p1")
		for _, b := range log {
			if err := replay.Apply(b.meta, b.evs); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(marshal(t, replay.Snapshot()), marshal(t, s.Snapshot())) {
			t.Fatal("full replay differs")
		}
	})
}

func unmarshalSnapshot(t tb, b []byte) *memoryv1.ScopeSnapshot {
	t.Helper()
	var snap memoryv1.ScopeSnapshot
	if err := proto.Unmarshal(b, &snap); err != nil {
		t.Fatal(err)
	}
	return &snap
}

func equalEntries(a, b []*memoryv1.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y *memoryv1.Entry) bool { return proto.Equal(x, y) })
}

// compare checks every read of s against the reference, and the invariants.
func compare(t *rapid.T, s *State, m *ref, now int64) {
	for _, k := range append(m.sorted(), "zz") {
		h, err := s.History(k)
		want := m.keys[k]
		if want == nil {
			if code(err) != 404 {
				t.Fatalf("History(%q) = %v, want 404", k, err)
			}
			continue
		}
		if err != nil || !equalEntries(h, want) {
			t.Fatalf("History(%q):\n got %v\nwant %v", k, h, want)
		}
		for i, e := range h {
			if e.Version != uint64(i+1) {
				t.Fatalf("History(%q): version %d at %d", k, e.Version, i)
			}
			if g, err := s.Get(k, e.Version, now); err != nil || !proto.Equal(g, e) {
				t.Fatalf("Get(%q, %d) = %v, %v", k, e.Version, g, err)
			}
		}
		if _, err := s.Get(k, uint64(len(h)+1), now); code(err) != 404 {
			t.Fatalf("Get(%q, next) = %v", k, err)
		}
		c := m.cur(k)
		g, err := s.Get(k, 0, now)
		if c.Deleted || refExpired(c, now) {
			if code(err) != 404 {
				t.Fatalf("Get(%q) = %v, want 404", k, err)
			}
		} else if err != nil || !proto.Equal(g, c) {
			t.Fatalf("Get(%q) = %v, %v, want %v", k, g, err, c)
		}
	}
	for _, req := range []*memoryv1.ListEntriesRequest{
		{}, {IncludeDeleted: true}, {Prefix: "d"}, {Tags: []string{"x"}},
		{MemoryType: memoryv1.MemoryType_MEMORY_TYPE_EPISODIC, IncludeDeleted: true},
	} {
		want := m.listed(req, now)
		got, tok, err := s.List(req, now)
		if err != nil || tok != "" || !equalEntries(got, want) {
			t.Fatalf("List(%v): got %v %q %v\nwant %v", req, got, tok, err, want)
		}
		paged := proto.Clone(req).(*memoryv1.ListEntriesRequest)
		paged.Limit = 2
		var all []*memoryv1.Entry
		for {
			page, tok, err := s.List(paged, now)
			if err != nil || len(page) > 2 {
				t.Fatalf("List page: %v", err)
			}
			all = append(all, page...)
			if tok == "" {
				break
			}
			paged.PageToken = tok
		}
		if !equalEntries(all, want) {
			t.Fatalf("paged List(%v) differs", req)
		}
	}
	checkInvariants(t, s)
	if s.Live() != m.live() {
		t.Fatalf("Live() = %d, want %d", s.Live(), m.live())
	}
	if mx := s.Config().GetMaxEntries(); mx > 0 && s.Live() > int(mx) {
		t.Fatalf("Live() = %d beyond max_entries %d", s.Live(), mx)
	}
}

// checkInvariants checks the invariants documented on State.
func checkInvariants(t tb, s *State) {
	t.Helper()
	live, next, liveBytes := 0, int64(0), int64(0)
	writers := map[string]Usage{}
	for i, kh := range s.snap.Keys {
		if i > 0 && s.snap.Keys[i-1].Key >= kh.Key {
			t.Fatalf("keys not sorted at %d", i)
		}
		if s.index[kh.Key] != kh || len(kh.Versions) == 0 {
			t.Fatalf("index broken for %q", kh.Key)
		}
		for j := 1; j < len(kh.Versions); j++ {
			if kh.Versions[j].Version != kh.Versions[j-1].Version+1 {
				t.Fatalf("versions of %q not consecutive", kh.Key)
			}
		}
		if e := last(kh); !e.Deleted {
			live++
			liveBytes += int64(len(e.Value))
			u := writers[e.UpdatedBy]
			u.Entries++
			u.Bytes += int64(len(e.Value))
			writers[e.UpdatedBy] = u
			if x := e.ExpiresUnixNano; x > 0 && (next == 0 || x < next) {
				next = x
			}
		}
	}
	if len(s.index) != len(s.snap.Keys) || live != s.live || next != s.nextExpiry || liveBytes != s.liveBytes {
		t.Fatalf("derived values: live %d/%d next %d/%d bytes %d/%d", s.live, live, s.nextExpiry, next, s.liveBytes, liveBytes)
	}
	if len(writers) != len(s.byWriter) {
		t.Fatalf("writers %v, counted %v", s.byWriter, writers)
	}
	for w, u := range writers {
		if s.byWriter[w] != u {
			t.Fatalf("writer %q holds %+v, counted %+v", w, s.byWriter[w], u)
		}
	}
	cached := 0
	for k, v := range s.cache.values {
		cached += len(v.value)
		e := s.current(k)
		if e == nil || e.Version != v.version || !e.Compressed {
			t.Fatalf("cache holds %q version %d, current is %v", k, v.version, e)
		}
		if d, err := DecodeValue(e); err != nil || !bytes.Equal(d, v.value) {
			t.Fatalf("cache of %q differs from the stored value (%v)", k, err)
		}
	}
	if cached != s.cache.bytes || cached > MaxPlainCacheBytes {
		t.Fatalf("cache bytes %d, counted %d, bound %d", s.cache.bytes, cached, MaxPlainCacheBytes)
	}
}
