package sharedmem

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Archive limits.
const (
	// MaxArchivePerCall bounds the entries one archive command tombstones,
	// so one batch stays well under a log message.
	MaxArchivePerCall = 1000
	// MaxArchiveDays bounds older_than_days (100 years).
	MaxArchiveDays = 36500
)

// Archived reports whether e is an archived entry: a tombstone that keeps
// its value (change ARCHIVE).
func Archived(e *memoryv1.Entry) bool {
	return e.GetDeleted() && e.GetChange() == memoryv1.ChangeKind_CHANGE_KIND_ARCHIVE
}

// archiveTombstone is the ARCHIVE tombstone after prev: a tombstone (out of
// reads, lists, search and contexts) that keeps prev's stored value, so a
// restore needs no older version, which compaction may have dropped.
func archiveTombstone(prev *memoryv1.Entry, by string, now int64) *memoryv1.Entry {
	e := tombstone(prev, memoryv1.ChangeKind_CHANGE_KIND_ARCHIVE, by, now)
	e.Value, e.Compressed, e.Size = slices.Clone(prev.Value), prev.Compressed, prev.Size
	return e
}

// DecideArchive decides an ArchiveEntriesRequest: an ARCHIVE tombstone, in
// key order, for each live entry of the memory type (UNSPECIFIED:
// episodic) with the prefix last updated at least older_than_days before
// env.NowUnixNano, at most limit of them. It returns the events (nil: none
// due), the keys, and whether more are due. It rejects with 400.
// The cutoff is decided here and recorded by the tombstones, so replay
// reproduces the outcome whatever the clock says then.
func (s *State) DecideArchive(req *memoryv1.ArchiveEntriesRequest, by string, env Env) ([]proto.Message, []string, bool, error) {
	days := req.GetOlderThanDays()
	if days < 1 || days > MaxArchiveDays {
		return nil, nil, false, badRequest("older_than_days", "must be 1..%d, got %d", MaxArchiveDays, days)
	}
	mt := req.GetMemoryType()
	if _, ok := memoryv1.MemoryType_name[int32(mt)]; !ok {
		return nil, nil, false, badRequest("memory_type", "unknown memory type %d", mt)
	}
	if mt == memoryv1.MemoryType_MEMORY_TYPE_UNSPECIFIED {
		mt = memoryv1.MemoryType_MEMORY_TYPE_EPISODIC
	}
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = MaxArchivePerCall
	case limit > MaxArchivePerCall:
		return nil, nil, false, badRequest("limit", "must be 1..%d, got %d", MaxArchivePerCall, limit)
	}
	b := s.newBatch(env)
	b.expireDue()
	cutoff := env.NowUnixNano - int64(days)*24*3600*1e9
	var keys []string
	for _, kh := range s.snap.Keys[s.search(req.GetPrefix()):] {
		if !strings.HasPrefix(kh.Key, req.GetPrefix()) {
			break
		}
		e := b.cur(kh.Key)
		if e.Deleted || e.MemoryType != mt || e.UpdatedUnixNano > cutoff {
			continue
		}
		if len(keys) == limit {
			return b.out, keys, true, nil
		}
		b.emit(archiveTombstone(e, by, b.now))
		keys = append(keys, e.Key)
	}
	return b.out, keys, false, nil
}

// DecideRestore decides a RestoreEntryRequest: a live version (change
// RESTORE, restored_from set) copying the content of the key's archived
// value, of the newest live version before its deletion, or of the
// version asked for; a TTL it had counts again from now (an archived value
// kept no expiry: an episodic one gets the episodic default from now, so
// a restored memory is not expired again at once). It rejects with
// 400 (key, a version that is a plain tombstone), 404 (unknown key or
// version, nothing live kept) or 409 (the key is live: that is a
// rollback's).
func (s *State) DecideRestore(req *memoryv1.RestoreEntryRequest, by string, env Env) ([]proto.Message, error) {
	kh, err := s.history(req.GetKey())
	if err != nil {
		return nil, err
	}
	b := s.newBatch(env)
	b.expireDue()
	cur := b.cur(req.Key)
	if !cur.Deleted {
		return nil, reject(CodeConflict, "key", "%q is live (version %d): restore brings back an archived or deleted entry; rollback changes a live one", req.Key, cur.Version)
	}
	src := restoreSource(kh, cur, req.GetVersion())
	if v := req.GetVersion(); v != 0 && src == nil {
		if findVersion(kh, v) == nil {
			return nil, missingVersion("version", kh, req.Key, v)
		}
		return nil, badRequest("version", "version %d of %q is a tombstone without a value", v, req.Key)
	}
	if src == nil {
		return nil, notFound("key", "%q keeps no live version to restore (compacted away or beyond the %d kept per key)", req.Key, MaxVersionsPerKey)
	}
	c := &content{contentType: src.ContentType, memoryType: src.MemoryType, importance: src.Importance, tags: src.Tags, metadata: src.Metadata}
	var ttl int64
	if src.ExpiresUnixNano > 0 {
		ttl = max(src.ExpiresUnixNano-src.UpdatedUnixNano, 1)
	}
	v := storedValue{bytes: slices.Clone(src.Value), compressed: src.Compressed, size: src.Size}
	return b.putLike(req.Key, c, v, b.expiresAt(ttl, src.MemoryType), by, memoryv1.ChangeKind_CHANGE_KIND_RESTORE, src.Version)
}

// restoreSource is the version a restore copies (nil: none): version v when
// it holds a value, else cur when archived, else the newest live version.
func restoreSource(kh *memoryv1.KeyHistory, cur *memoryv1.Entry, v uint64) *memoryv1.Entry {
	if v != 0 {
		if e := findVersion(kh, v); e != nil && (!e.Deleted || Archived(e)) {
			return e
		}
		return nil
	}
	if Archived(cur) {
		return cur
	}
	for _, e := range slices.Backward(kh.Versions) {
		if !e.Deleted || Archived(e) {
			return e
		}
	}
	return nil
}

// RestoreLen is the stored length of the value a restore of key (from
// version, 0: the default source) would bring back (false: none), so the
// actor can check the writer's quota before deciding.
func (s *State) RestoreLen(key string, version uint64) (int, bool) {
	kh, ok := s.index[key]
	if !ok {
		return 0, false
	}
	src := restoreSource(kh, last(kh), version)
	if src == nil {
		return 0, false
	}
	return len(src.Value), true
}
