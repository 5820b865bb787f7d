package sharedmem

import (
	"encoding/base64"
	"slices"
	"strings"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// List limits.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// Reads never return compressed values (see Plain). An entry whose expiry
// has passed at now (0 < expires <= now) but whose EXPIRE tombstone is not
// stored yet is treated as absent by Get(key, 0) and List; its versions stay
// readable by number and in History.

// Get returns the current live version of key (version 0) or the given
// version (tombstones included, with deleted set). It rejects with 400 (bad
// key) or 404.
func (s *State) Get(key string, version uint64, now int64) (*memoryv1.Entry, error) {
	kh, err := s.history(key)
	if err != nil {
		return nil, err
	}
	if version == 0 {
		e := last(kh)
		if e.Deleted || expired(e, now) {
			return nil, notFound("key", "no live entry %q", key)
		}
		return s.plain(e)
	}
	e := findVersion(kh, version)
	if e == nil {
		return nil, missingVersion("version", kh, key, version)
	}
	return s.plain(e)
}

// Has reports whether key has a live current version at now (what Get(key,
// 0, now) would find), without copying or decoding its value.
func (s *State) Has(key string, now int64) bool {
	kh, ok := s.index[key]
	if !ok {
		return false
	}
	e := last(kh)
	return !e.Deleted && !expired(e, now)
}

// List returns the current versions of the keys with req.prefix, sorted by
// key, after the page token, at most limit (1..1000, 0 = 100) of them, and
// the token of the next page ("" when there is none). Tombstones are listed
// only with include_deleted; memory_type (UNSPECIFIED = any) and tags
// (every one present), older_than_seconds (last updated at least that long
// ago) and archived (only ARCHIVE tombstones) filter. The page token is the base64url of the last
// key returned. It rejects with 400 (limit, page_token).
func (s *State) List(req *memoryv1.ListEntriesRequest, now int64) ([]*memoryv1.Entry, string, error) {
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		return nil, "", badRequest("limit", "must be 1..%d, got %d", MaxListLimit, limit)
	case req.GetOlderThanSeconds() < 0 || req.GetOlderThanSeconds() > MaxTTLSeconds:
		return nil, "", badRequest("older_than_seconds", "must be 0..%d, got %d", MaxTTLSeconds, req.GetOlderThanSeconds())
	}
	var after string
	if t := req.GetPageToken(); t != "" {
		b, err := base64.RawURLEncoding.DecodeString(t)
		if err != nil || ValidateKey(string(b)) != nil {
			return nil, "", badRequest("page_token", "not a token this scope returned")
		}
		after = string(b)
	}
	prefix := req.GetPrefix()
	i := s.search(prefix)
	if after != "" {
		j := s.search(after)
		if j < len(s.snap.Keys) && s.snap.Keys[j].Key == after {
			j++
		}
		i = max(i, j)
	}
	var out []*memoryv1.Entry
	for _, kh := range s.snap.Keys[i:] {
		if !strings.HasPrefix(kh.Key, prefix) {
			break
		}
		e := last(kh)
		if !listed(e, req, now) {
			continue
		}
		if len(out) == limit {
			return out, base64.RawURLEncoding.EncodeToString([]byte(out[len(out)-1].Key)), nil
		}
		p, err := s.plain(e)
		if err != nil {
			return nil, "", err
		}
		out = append(out, p)
	}
	return out, "", nil
}

// search returns the index of the first key >= key.
func (s *State) search(key string) int {
	i, _ := slices.BinarySearchFunc(s.snap.Keys, key, func(kh *memoryv1.KeyHistory, k string) int {
		return strings.Compare(kh.Key, k)
	})
	return i
}

func listed(e *memoryv1.Entry, req *memoryv1.ListEntriesRequest, now int64) bool {
	switch {
	case req.GetArchived() && !Archived(e):
		return false
	case e.Deleted && !req.GetIncludeDeleted() && !req.GetArchived() || expired(e, now):
		return false
	case req.GetOlderThanSeconds() > 0 && e.UpdatedUnixNano > now-req.GetOlderThanSeconds()*1e9:
		return false
	}
	if mt := req.GetMemoryType(); mt != memoryv1.MemoryType_MEMORY_TYPE_UNSPECIFIED && e.MemoryType != mt {
		return false
	}
	for _, t := range req.GetTags() {
		if !slices.Contains(e.Tags, t) {
			return false
		}
	}
	return true
}

// History returns every kept version of key (at most MaxVersionsPerKey),
// oldest first, tombstones included. It rejects with 400 or 404.
func (s *State) History(key string) ([]*memoryv1.Entry, error) {
	kh, err := s.history(key)
	if err != nil {
		return nil, err
	}
	out := make([]*memoryv1.Entry, 0, len(kh.Versions))
	for _, e := range kh.Versions {
		p, err := s.plain(e)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// history returns the history of key; it rejects with 400 (bad key) or 404.
func (s *State) history(key string) (*memoryv1.KeyHistory, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	kh, ok := s.index[key]
	if !ok {
		return nil, notFound("key", "no entry %q", key)
	}
	return kh, nil
}
