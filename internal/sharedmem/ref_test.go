package sharedmem

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// ref is the naive reference model: key -> versions (plain values, versions
// 1..n), written independently of State (no index, no overlay, quadratic
// eviction).
type ref struct {
	keys        map[string][]*memoryv1.Entry
	maxEntries  uint32
	episodicTTL int64
}

var refKey = regexp.MustCompile(`^[A-Za-z0-9_@-][A-Za-z0-9_.:/@-]{0,255}$`)

func (m *ref) clone() *ref {
	c := *m
	c.keys = map[string][]*memoryv1.Entry{}
	for k, v := range m.keys {
		c.keys[k] = slices.Clone(v)
	}
	return &c
}

func (m *ref) cur(k string) *memoryv1.Entry {
	if v := m.keys[k]; len(v) > 0 {
		return v[len(v)-1]
	}
	return nil
}

func (m *ref) sorted() []string { return slices.Sorted(maps.Keys(m.keys)) }

func (m *ref) live() int {
	n := 0
	for k := range m.keys {
		if !m.cur(k).Deleted {
			n++
		}
	}
	return n
}

func (m *ref) add(e *memoryv1.Entry) { m.keys[e.Key] = append(m.keys[e.Key], e) }

func refTomb(c *memoryv1.Entry, ch memoryv1.ChangeKind, by string, now int64) *memoryv1.Entry {
	return &memoryv1.Entry{Key: c.Key, ContentType: c.ContentType, MemoryType: c.MemoryType, Version: c.Version + 1,
		Deleted: true, CreatedUnixNano: c.CreatedUnixNano, CreatedBy: c.CreatedBy, UpdatedUnixNano: now, UpdatedBy: by,
		Importance: c.Importance, Tags: c.Tags, Metadata: c.Metadata, Change: ch}
}

func refExpired(e *memoryv1.Entry, now int64) bool {
	return !e.Deleted && e.ExpiresUnixNano > 0 && e.ExpiresUnixNano <= now
}

func (m *ref) expire(now int64) {
	for _, k := range m.sorted() {
		if c := m.cur(k); refExpired(c, now) {
			m.add(refTomb(c, memoryv1.ChangeKind_CHANGE_KIND_EXPIRE, "", now))
		}
	}
}

func (m *ref) evict(keep string, extra int, by string, now int64) {
	for m.maxEntries > 0 && m.live()+extra > int(m.maxEntries) {
		var victim *memoryv1.Entry
		for _, k := range m.sorted() {
			c := m.cur(k)
			if c.Deleted || k == keep {
				continue
			}
			if victim == nil || c.Importance < victim.Importance ||
				c.Importance == victim.Importance && c.UpdatedUnixNano < victim.UpdatedUnixNano {
				victim = c
			}
		}
		m.add(refTomb(victim, memoryv1.ChangeKind_CHANGE_KIND_EVICT, by, now))
	}
}

func (m *ref) expiresFor(now, ttl int64, mt memoryv1.MemoryType) int64 {
	if ttl == 0 && mt == memoryv1.MemoryType_MEMORY_TYPE_EPISODIC {
		ttl = m.episodicTTL * 1e9
	}
	if ttl == 0 {
		return 0
	}
	return now + ttl
}

// write adds a new live version of e.Key from template e (content fields).
func (m *ref) write(e *memoryv1.Entry, by string, now int64) {
	c := m.cur(e.Key)
	extra := 1
	if c != nil && !c.Deleted {
		extra = 0
	}
	m.evict(e.Key, extra, by, now)
	e.Version = c.GetVersion() + 1
	e.CreatedUnixNano, e.CreatedBy, e.UpdatedUnixNano, e.UpdatedBy = now, by, now, by
	if c != nil && !c.Deleted {
		e.CreatedUnixNano, e.CreatedBy = c.CreatedUnixNano, c.CreatedBy
	}
	e.Size = uint32(len(e.Value))
	m.add(e)
}

func refCAS(ev *int64, c *memoryv1.Entry) int {
	switch {
	case ev == nil || *ev == -1:
		return 0
	case *ev == 0:
		if c != nil && !c.Deleted {
			return 409
		}
		return 0
	case uint64(*ev) != c.GetVersion():
		return 409
	}
	return 0
}

// Each op returns the rejection code (0: accepted) and the next model.
func (m *ref) put(r *memoryv1.PutEntryRequest, by string, now int64) (int, *ref) {
	ev := r.ExpectedVersion
	if !refKey.MatchString(r.Key) || r.Importance < 0 || r.Importance > 1 || r.TtlSeconds < 0 || ev != nil && *ev < -1 {
		return 400, m
	}
	n := m.clone()
	n.expire(now)
	if c := refCAS(ev, n.cur(r.Key)); c != 0 {
		return c, m
	}
	mt := r.MemoryType
	if mt == 0 {
		mt = memoryv1.MemoryType_MEMORY_TYPE_SEMANTIC
	}
	n.write(&memoryv1.Entry{Key: r.Key, Value: r.Value, ContentType: r.ContentType, MemoryType: mt,
		ExpiresUnixNano: n.expiresFor(now, r.TtlSeconds*1e9, mt), Importance: r.Importance, Tags: r.Tags,
		Metadata: r.Metadata, Change: memoryv1.ChangeKind_CHANGE_KIND_PUT}, by, now)
	return 0, n
}

func (m *ref) del(r *memoryv1.DeleteEntryRequest, by string, now int64) (int, *ref) {
	if !refKey.MatchString(r.Key) || r.ExpectedVersion != nil && *r.ExpectedVersion < -1 {
		return 400, m
	}
	n := m.clone()
	n.expire(now)
	c := n.cur(r.Key)
	if c == nil || c.Deleted {
		return 404, m
	}
	if x := refCAS(r.ExpectedVersion, c); x != 0 {
		return x, m
	}
	n.add(refTomb(c, memoryv1.ChangeKind_CHANGE_KIND_DELETE, by, now))
	return 0, n
}

func (m *ref) rollback(r *memoryv1.RollbackEntryRequest, by string, now int64) (int, *ref) {
	if !refKey.MatchString(r.Key) || r.ToVersion == 0 || r.ExpectedVersion != nil && *r.ExpectedVersion < -1 {
		return 400, m
	}
	h := m.keys[r.Key]
	if h == nil || r.ToVersion > uint64(len(h)) {
		return 404, m
	}
	src := h[r.ToVersion-1]
	if src.Deleted {
		return 400, m
	}
	n := m.clone()
	n.expire(now)
	if x := refCAS(r.ExpectedVersion, n.cur(r.Key)); x != 0 {
		return x, m
	}
	var ttl int64
	if src.ExpiresUnixNano > 0 {
		ttl = max(src.ExpiresUnixNano-src.UpdatedUnixNano, 1)
	}
	n.write(&memoryv1.Entry{Key: r.Key, Value: src.Value, ContentType: src.ContentType, MemoryType: src.MemoryType,
		ExpiresUnixNano: n.expiresFor(now, ttl, src.MemoryType), Importance: src.Importance, Tags: src.Tags,
		Metadata: src.Metadata, Change: memoryv1.ChangeKind_CHANGE_KIND_ROLLBACK, RestoredFrom: r.ToVersion}, by, now)
	return 0, n
}

func (m *ref) copyFrom(src *memoryv1.Entry, plain []byte, by string, now int64) (int, *ref) {
	if src.Deleted {
		return 400, m
	}
	if refExpired(src, now) {
		return 404, m
	}
	n := m.clone()
	n.expire(now)
	exp := src.ExpiresUnixNano
	if exp == 0 {
		exp = n.expiresFor(now, 0, src.MemoryType)
	}
	n.write(&memoryv1.Entry{Key: src.Key, Value: plain, ContentType: src.ContentType, MemoryType: src.MemoryType,
		ExpiresUnixNano: exp, Importance: src.Importance, Tags: src.Tags, Metadata: src.Metadata,
		Change: memoryv1.ChangeKind_CHANGE_KIND_PUBLISH}, by, now)
	return 0, n
}

func (m *ref) configure(c *memoryv1.ScopeConfig, now int64) *ref {
	n := m.clone()
	n.expire(now)
	n.maxEntries, n.episodicTTL = c.MaxEntries, c.EpisodicTtlSeconds
	n.evict("", 0, "", now)
	return n
}

// listed is the reference List over everything (no paging).
func (m *ref) listed(req *memoryv1.ListEntriesRequest, now int64) []*memoryv1.Entry {
	var out []*memoryv1.Entry
	for _, k := range m.sorted() {
		c := m.cur(k)
		if !strings.HasPrefix(k, req.Prefix) || refExpired(c, now) || c.Deleted && !req.IncludeDeleted {
			continue
		}
		if req.MemoryType != 0 && c.MemoryType != req.MemoryType {
			continue
		}
		ok := true
		for _, t := range req.Tags {
			ok = ok && slices.Contains(c.Tags, t)
		}
		if ok {
			out = append(out, c)
		}
	}
	return out
}
