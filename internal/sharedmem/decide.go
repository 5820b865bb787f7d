package sharedmem

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
	"google.golang.org/protobuf/proto"
)

// A decision's batch is, in order: the EXPIRE tombstones that are due at
// env.NowUnixNano (so a decision never treats an expired entry as live),
// then the command's own events: for the put-like commands (put, rollback,
// copy) the EVICT tombstones the bound requires followed, last, by the new
// version of the key; for delete the tombstone; for configure
// ScopeConfigured followed by the EVICT tombstones. Decide* never mutate
// the state, and a rejected command emits nothing.

// batch accumulates the events of one decision and the view of the state
// they produce, without touching the state.
type batch struct {
	s      *State
	now    int64
	out    []proto.Message
	latest map[string]*memoryv1.Entry // keys changed by the batch
	live   int
	// evictOwn limits evictions to the writer's own entries (Env.EvictOwn).
	evictOwn bool
	// episodicTTL is Env.EpisodicTTLSeconds.
	episodicTTL int64
}

func (s *State) newBatch(env Env) *batch {
	return &batch{s: s, now: env.NowUnixNano, live: s.live, evictOwn: env.EvictOwn, episodicTTL: env.EpisodicTTLSeconds}
}

// cur returns key's current version as of the batch so far (nil: unknown).
func (b *batch) cur(key string) *memoryv1.Entry {
	if e, ok := b.latest[key]; ok {
		return e
	}
	return b.s.current(key)
}

func (b *batch) emit(e *memoryv1.Entry) {
	if prev := b.cur(e.Key); prev != nil && !prev.Deleted {
		b.live--
	}
	if !e.Deleted {
		b.live++
	}
	if b.latest == nil {
		b.latest = map[string]*memoryv1.Entry{}
	}
	b.latest[e.Key] = e
	b.out = append(b.out, &memoryv1.EntryChanged{Entry: e})
}

// expireDue emits an EXPIRE tombstone, in key order, for every live entry
// with 0 < expires <= now.
func (b *batch) expireDue() {
	if x := b.s.nextExpiry; x == 0 || x > b.now {
		return
	}
	for _, kh := range b.s.snap.Keys {
		if e := b.cur(kh.Key); expired(e, b.now) {
			b.emit(tombstone(e, memoryv1.ChangeKind_CHANGE_KIND_EXPIRE, "", b.now))
		}
	}
}

// evict emits EVICT tombstones until live+extra <= maxEntries (0:
// unbounded): least important first, then least recently updated, then
// smallest key. It never evicts keep; with own set, it evicts only entries
// own wrote last (updated_by). It reports whether the bound now holds.
func (b *batch) evict(maxEntries uint32, keep string, extra int, by, own string) bool {
	if maxEntries == 0 || b.live+extra <= int(maxEntries) {
		return true
	}
	var cands []*memoryv1.Entry
	for _, kh := range b.s.snap.Keys {
		if e := b.cur(kh.Key); !e.Deleted && e.Key != keep && (own == "" || e.UpdatedBy == own) {
			cands = append(cands, e)
		}
	}
	slices.SortFunc(cands, func(x, y *memoryv1.Entry) int {
		return cmp.Or(cmp.Compare(x.Importance, y.Importance),
			cmp.Compare(x.UpdatedUnixNano, y.UpdatedUnixNano),
			strings.Compare(x.Key, y.Key))
	})
	for _, e := range cands {
		if b.live+extra <= int(maxEntries) {
			return true
		}
		b.emit(tombstone(e, memoryv1.ChangeKind_CHANGE_KIND_EVICT, by, b.now))
	}
	return b.live+extra <= int(maxEntries)
}

// tombstone returns the version after prev recording its deletion. It keeps
// prev's descriptive fields (type, importance, tags, metadata, created_*)
// so filters and audits still see them, but no value and no expiry.
func tombstone(prev *memoryv1.Entry, change memoryv1.ChangeKind, by string, now int64) *memoryv1.Entry {
	return &memoryv1.Entry{
		Key:             prev.Key,
		ContentType:     prev.ContentType,
		MemoryType:      prev.MemoryType,
		Version:         prev.Version + 1,
		Deleted:         true,
		CreatedUnixNano: prev.CreatedUnixNano,
		CreatedBy:       prev.CreatedBy,
		UpdatedUnixNano: now,
		UpdatedBy:       by,
		Importance:      prev.Importance,
		Tags:            slices.Clone(prev.Tags),
		Metadata:        maps.Clone(prev.Metadata),
		Change:          change,
	}
}

// storedValue is a value in its stored form.
type storedValue struct {
	bytes      []byte
	compressed bool
	size       uint32 // of the original value
}

// encode encodes value, the new value of key, and remembers its original
// bytes (owned: not aliased by the caller) for the cache.
func (s *State) encode(key string, value []byte, owned bool) storedValue {
	b, c := EncodeValue(value)
	v := storedValue{bytes: b, compressed: c, size: uint32(len(value))}
	if c && !owned {
		value = slices.Clone(value)
	}
	s.remember(key, v, value)
	return v
}

// version returns the new live version of key after cur (nil: none).
// created_* are kept from cur when it is live (the same "life").
func (b *batch) version(cur *memoryv1.Entry, key string, c *content, v storedValue, expires int64, by string, change memoryv1.ChangeKind) *memoryv1.Entry {
	e := &memoryv1.Entry{
		Key:             key,
		Value:           v.bytes,
		Compressed:      v.compressed,
		Size:            v.size,
		ContentType:     c.contentType,
		MemoryType:      c.memoryType,
		Version:         cur.GetVersion() + 1,
		CreatedUnixNano: b.now,
		CreatedBy:       by,
		UpdatedUnixNano: b.now,
		UpdatedBy:       by,
		ExpiresUnixNano: expires,
		Importance:      c.importance,
		Tags:            slices.Clone(c.tags),
		Metadata:        maps.Clone(c.metadata),
		Change:          change,
	}
	if len(e.Metadata) == 0 {
		e.Metadata = nil
	}
	if cur != nil && !cur.Deleted {
		e.CreatedUnixNano, e.CreatedBy = cur.CreatedUnixNano, cur.CreatedBy
	}
	return e
}

// expiresAt returns the expiry of an entry written now with a TTL of
// ttlNanos (0: for an episodic entry the scope's episodic_ttl_seconds, or
// when that is 0 the node's default Env.EpisodicTTLSeconds, -1 never; for
// other types never). The result is recorded in the entry's event, so a
// later change of either setting never changes what replay gives.
func (b *batch) expiresAt(ttlNanos int64, mt memoryv1.MemoryType) int64 {
	now := b.now
	if ttlNanos == 0 && mt == memoryv1.MemoryType_MEMORY_TYPE_EPISODIC {
		secs := b.s.snap.GetConfig().GetEpisodicTtlSeconds()
		if secs == 0 {
			secs = b.episodicTTL
		}
		ttlNanos = secs * 1e9
	}
	if ttlNanos <= 0 {
		return 0
	}
	if now > math.MaxInt64-ttlNanos {
		return math.MaxInt64
	}
	return now + ttlNanos
}

// putLike finishes a put, rollback or copy: evictions, then the new version.
// With b.evictOwn, evictions take only by's own entries, and when they do
// not make room under max_entries the write is refused (413 max_entries).
func (b *batch) putLike(key string, c *content, v storedValue, expires int64, by string, change memoryv1.ChangeKind, restoredFrom uint64) ([]proto.Message, error) {
	cur := b.cur(key)
	extra := 1
	if cur != nil && !cur.Deleted {
		extra = 0
	}
	own := ""
	if b.evictOwn {
		own = by
	}
	if mx := b.s.snap.GetConfig().GetMaxEntries(); !b.evict(mx, key, extra, by, own) {
		return nil, reject(CodeTooLarge, "max_entries", "the scope holds %d live entries, its configured max_entries is %d, and this writer has no entry of its own left to evict (a write never evicts another writer's entries)", b.s.live, mx)
	}
	e := b.version(cur, key, c, v, expires, by, change)
	e.RestoredFrom = restoredFrom
	b.emit(e)
	return b.out, nil
}

// DecidePut decides a PutEntryRequest written by by (the actor chooses it;
// req.by is informational). It rejects with 400 (key, content_type,
// memory_type, importance, tags, metadata, ttl_seconds, expected_version),
// 413 (value larger than MaxValueBytes) or 409 (expected version).
func (s *State) DecidePut(req *memoryv1.PutEntryRequest, by string, env Env) ([]proto.Message, error) {
	if err := ValidateKey(req.GetKey()); err != nil {
		return nil, err
	}
	c := &content{
		value: req.GetValue(), contentType: req.GetContentType(), memoryType: req.GetMemoryType(),
		importance: req.GetImportance(), tags: req.GetTags(), metadata: req.GetMetadata(),
	}
	if err := validateContent(c); err != nil {
		return nil, err
	}
	if err := validateTTL("ttl_seconds", req.GetTtlSeconds()); err != nil {
		return nil, err
	}
	if err := validateExpected(req.ExpectedVersion); err != nil {
		return nil, err
	}
	b := s.newBatch(env)
	b.expireDue()
	if err := checkExpected(req.ExpectedVersion, b.cur(req.Key)); err != nil {
		return nil, err
	}
	expires := b.expiresAt(req.GetTtlSeconds()*1e9, c.memoryType)
	return b.putLike(req.Key, c, s.encode(req.Key, c.value, false), expires, by, memoryv1.ChangeKind_CHANGE_KIND_PUT, 0)
}

// DecideDelete decides a DeleteEntryRequest: a DELETE tombstone. It rejects
// with 400 (key, expected_version), 404 (no live entry) or 409.
func (s *State) DecideDelete(req *memoryv1.DeleteEntryRequest, by string, env Env) ([]proto.Message, error) {
	if err := ValidateKey(req.GetKey()); err != nil {
		return nil, err
	}
	if err := validateExpected(req.ExpectedVersion); err != nil {
		return nil, err
	}
	b := s.newBatch(env)
	b.expireDue()
	cur := b.cur(req.Key)
	if cur == nil || cur.Deleted {
		return nil, notFound("key", "no live entry %q", req.Key)
	}
	if err := checkExpected(req.ExpectedVersion, cur); err != nil {
		return nil, err
	}
	b.emit(tombstone(cur, memoryv1.ChangeKind_CHANGE_KIND_DELETE, by, b.now))
	return b.out, nil
}

// DecideRollback decides a RollbackEntryRequest: a new version copying the
// content of to_version (its stored value as is; its TTL, if it had one,
// counted again from now), with change ROLLBACK and restored_from set. It
// rejects with 404 (unknown key or version), 400 (to_version 0 or a
// tombstone, bad key or expected_version) or 409.
func (s *State) DecideRollback(req *memoryv1.RollbackEntryRequest, by string, env Env) ([]proto.Message, error) {
	if err := ValidateKey(req.GetKey()); err != nil {
		return nil, err
	}
	if req.GetToVersion() == 0 {
		return nil, badRequest("to_version", "must be a version (>= 1)")
	}
	if err := validateExpected(req.ExpectedVersion); err != nil {
		return nil, err
	}
	kh, ok := s.index[req.Key]
	if !ok {
		return nil, notFound("key", "no entry %q", req.Key)
	}
	src := findVersion(kh, req.ToVersion)
	if src == nil {
		return nil, missingVersion("to_version", kh, req.Key, req.ToVersion)
	}
	if src.Deleted {
		return nil, badRequest("to_version", "version %d of %q is a tombstone", req.ToVersion, req.Key)
	}
	b := s.newBatch(env)
	b.expireDue()
	if err := checkExpected(req.ExpectedVersion, b.cur(req.Key)); err != nil {
		return nil, err
	}
	c := &content{
		contentType: src.ContentType, memoryType: src.MemoryType,
		importance: src.Importance, tags: src.Tags, metadata: src.Metadata,
	}
	var ttl int64
	if src.ExpiresUnixNano > 0 {
		ttl = max(src.ExpiresUnixNano-src.UpdatedUnixNano, 1)
	}
	expires := b.expiresAt(ttl, src.MemoryType)
	v := storedValue{bytes: slices.Clone(src.Value), compressed: src.Compressed, size: src.Size}
	return b.putLike(req.Key, c, v, expires, by, memoryv1.ChangeKind_CHANGE_KIND_ROLLBACK, req.ToVersion)
}

// DecideCopy decides a publish: src's key and content (its original value
// re-encoded, its expiry kept) become a new version of the key here, with
// change PUBLISH, whatever the current version. It rejects with 400 (a
// missing, tombstoned, corrupt or invalid src), 404 (src has expired) or
// 413.
func (s *State) DecideCopy(src *memoryv1.Entry, by string, env Env) ([]proto.Message, error) {
	if src == nil {
		return nil, badRequest("entry", "missing")
	}
	if err := ValidateKey(src.Key); err != nil {
		return nil, err
	}
	if src.Deleted {
		return nil, badRequest("entry", "version %d of %q is a tombstone", src.Version, src.Key)
	}
	if src.Size > MaxValueBytes {
		return nil, reject(CodeTooLarge, "value", "value is %d bytes, the limit is %d", src.Size, MaxValueBytes)
	}
	v, err := DecodeValue(src)
	if err != nil {
		return nil, badRequest("value", "%v", err)
	}
	c := &content{
		value: v, contentType: src.ContentType, memoryType: src.MemoryType,
		importance: src.Importance, tags: src.Tags, metadata: src.Metadata,
	}
	if err := validateContent(c); err != nil {
		return nil, err
	}
	if expired(src, env.NowUnixNano) {
		return nil, notFound("entry", "%q expired", src.Key)
	}
	b := s.newBatch(env)
	b.expireDue()
	expires := src.ExpiresUnixNano
	if expires == 0 {
		expires = b.expiresAt(0, c.memoryType)
	}
	return b.putLike(src.Key, c, s.encode(src.Key, v, true), expires, by, memoryv1.ChangeKind_CHANGE_KIND_PUBLISH, 0)
}

// DecideConfigure decides a ConfigureScopeRequest: ScopeConfigured, then
// the EVICT tombstones that bring the live keys within the new bound. The
// episodic TTL applies to entries written afterwards. It rejects with 400.
func (s *State) DecideConfigure(req *memoryv1.ConfigureScopeRequest, env Env) ([]proto.Message, error) {
	cfg := req.GetConfig()
	if cfg == nil {
		return nil, badRequest("config", "missing")
	}
	if cfg.EpisodicTtlSeconds != NeverExpires {
		if err := validateTTL("config.episodic_ttl_seconds", cfg.EpisodicTtlSeconds); err != nil {
			return nil, err
		}
	}
	switch cfg.ConflictStrategy {
	case "", StrategyLastWriteWins, StrategyReview, StrategyLLM:
	default:
		return nil, badRequest("config.conflict_strategy", "%q: must be %q, %q or %q", cfg.ConflictStrategy, StrategyLastWriteWins, StrategyReview, StrategyLLM)
	}
	b := s.newBatch(env)
	b.expireDue()
	b.out = append(b.out, &memoryv1.ScopeConfigured{MaxEntries: cfg.MaxEntries, EpisodicTtlSeconds: cfg.EpisodicTtlSeconds, ConflictStrategy: cfg.ConflictStrategy})
	b.evict(cfg.MaxEntries, "", 0, "", "")
	return b.out, nil
}

// DecideExpire returns an EXPIRE tombstone, in key order, for every live
// entry with 0 < expires_unix_nano <= env.NowUnixNano (nil: none due).
func (s *State) DecideExpire(env Env) []proto.Message {
	b := s.newBatch(env)
	b.expireDue()
	return b.out
}

// DecideEnd decides the end of a session scope's session (its session was
// terminated or archived: session-scope entries end with the
// session): the EXPIRE tombstones due at env.NowUnixNano, then an END
// tombstone, in key order, for every other live entry (nil: nothing live).
// The tombstones keep no value, so reads, lists and search no longer find
// the entries; their history stays until erase exists. Any scope kind may
// be ended; the actors end only session scopes.
func (s *State) DecideEnd(env Env) []proto.Message {
	b := s.newBatch(env)
	b.expireDue()
	for _, kh := range s.snap.Keys {
		if e := b.cur(kh.Key); !e.Deleted {
			b.emit(tombstone(e, memoryv1.ChangeKind_CHANGE_KIND_END, "", b.now))
		}
	}
	return b.out
}

// findVersion returns version v of a history (nil: not kept).
// missingVersion is the 404 of a version key does not hold (field names
// the request's field): one older than the first version kept says why
// (the time-travel window of a compacted log, or MaxVersionsPerKey).
func missingVersion(field string, kh *memoryv1.KeyHistory, key string, v uint64) error {
	if first := kh.Versions[0].Version; v < first {
		return notFound(field, "key %q has no version %d any more: versions before %d are outside the time-travel window (compacted away) or beyond the %d kept per key",
			key, v, first, MaxVersionsPerKey)
	}
	return notFound(field, "key %q has no version %d", key, v)
}

func findVersion(kh *memoryv1.KeyHistory, v uint64) *memoryv1.Entry {
	first := kh.Versions[0].Version
	if v >= first && v-first < uint64(len(kh.Versions)) {
		if e := kh.Versions[v-first]; e.Version == v {
			return e
		}
	}
	for _, e := range kh.Versions {
		if e.Version == v {
			return e
		}
	}
	return nil
}
