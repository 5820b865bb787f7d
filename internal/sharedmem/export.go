package sharedmem

import (
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Export and import limits.
const (
	DefaultExportKeys = 100
	MaxExportKeys     = 200
	// MaxExportPageBytes bounds the original value bytes of one export page
	// (base64 in JSON makes it about 5.4 MiB, under the node's 8 MiB
	// message); a page always holds at least one key's current version.
	MaxExportPageBytes = 4 << 20
	// MaxImportKeys bounds the keys of one import request, so its batch
	// stays one log message.
	MaxImportKeys = 500
)

// Export returns a page of the scope's keys with prefix after the page
// token, each with its kept versions (original values), oldest first: at
// most limit keys (1..200, 0 = 100) and maxBytes of values (0 =
// MaxExportPageBytes). A key whose history does not fit keeps its newest
// versions and is named in truncated. The token is List's. It rejects with
// 400 (limit, page_token).
func (s *State) Export(req *memoryv1.ExportEntriesRequest, maxBytes int) (keys []*memoryv1.KeyHistory, next string, truncated []string, err error) {
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = DefaultExportKeys
	case limit > MaxExportKeys:
		return nil, "", nil, badRequest("limit", "must be 1..%d, got %d", MaxExportKeys, limit)
	}
	if maxBytes <= 0 || maxBytes > MaxExportPageBytes {
		maxBytes = MaxExportPageBytes
	}
	i, err := s.after(req.GetPrefix(), req.GetPageToken())
	if err != nil {
		return nil, "", nil, err
	}
	used := 0
	for _, kh := range s.snap.Keys[i:] {
		if !strings.HasPrefix(kh.Key, req.GetPrefix()) {
			break
		}
		if len(keys) == limit || (len(keys) > 0 && used+int(last(kh).Size) > maxBytes) {
			return keys, pageToken(keys[len(keys)-1].Key), truncated, nil
		}
		out := &memoryv1.KeyHistory{Key: kh.Key}
		for j, e := range slices.Backward(kh.Versions) {
			if j < len(kh.Versions)-1 && used+int(e.Size) > maxBytes {
				truncated = append(truncated, kh.Key)
				break
			}
			p, err := s.plain(e)
			if err != nil {
				return nil, "", nil, err
			}
			used += int(e.Size)
			out.Versions = append(out.Versions, p)
		}
		slices.Reverse(out.Versions)
		keys = append(keys, out)
	}
	return keys, "", truncated, nil
}

// after is the index of the first key with prefix after the page token.
func (s *State) after(prefix, token string) (int, error) {
	i := s.search(prefix)
	if token == "" {
		return i, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || ValidateKey(string(b)) != nil {
		return 0, badRequest("page_token", "not a token this scope returned")
	}
	j := s.search(string(b))
	if j < len(s.snap.Keys) && s.snap.Keys[j].Key == string(b) {
		j++
	}
	return max(i, j), nil
}

func pageToken(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

// Import actions (memoryv1.ImportChange.action).
const (
	ImportCreate    = "create"
	ImportUpdate    = "update"
	ImportArchive   = "archive"
	ImportRestore   = "restore"
	ImportUnchanged = "unchanged"
	ImportSkip      = "skip"
)

// DecideImport decides an ImportEntriesRequest: for each key the newest
// version of its exported history is the wanted state, a live value or an
// archived one. A key whose current version here has the same content and
// state is unchanged (so an import applied twice changes nothing); else the
// content is written as a new version (change IMPORT) and archived after
// it when it was archived. A deleted or expired key is skipped. The
// events and one change per key, in the request's order, are returned. It
// rejects with 400 (no keys, a key, a value's content) or 413 (more
// than MaxImportKeys keys, max_entries) and then writes nothing.
func (s *State) DecideImport(req *memoryv1.ImportEntriesRequest, by string, env Env) ([]proto.Message, []*memoryv1.ImportChange, error) {
	switch n := len(req.GetKeys()); {
	case n == 0:
		return nil, nil, badRequest("keys", "required: the keys of an export")
	case n > MaxImportKeys:
		return nil, nil, reject(CodeTooLarge, "keys", "an import takes at most %d keys, got %d: split the file into requests", MaxImportKeys, n)
	}
	b := s.newBatch(env)
	b.expireDue()
	seen := map[string]bool{}
	changes := make([]*memoryv1.ImportChange, 0, len(req.GetKeys()))
	for i, kh := range req.GetKeys() {
		ch, err := b.importKey(kh, by, seen)
		if err != nil {
			if r, ok := err.(*Rejection); ok {
				r.Field = "keys[" + strconv.Itoa(i) + "]." + r.Field
			}
			return nil, nil, err
		}
		changes = append(changes, ch)
	}
	return b.out, changes, nil
}

// importKey adds the events importing one exported key to the batch.
func (b *batch) importKey(kh *memoryv1.KeyHistory, by string, seen map[string]bool) (*memoryv1.ImportChange, error) {
	if err := ValidateKey(kh.GetKey()); err != nil {
		return nil, err
	}
	if seen[kh.Key] {
		return nil, badRequest("key", "%q is given twice", kh.Key)
	}
	seen[kh.Key] = true
	ch := &memoryv1.ImportChange{Key: kh.Key}
	if len(kh.GetVersions()) == 0 {
		return nil, badRequest("versions", "%q has no version", kh.Key)
	}
	src := kh.Versions[len(kh.Versions)-1]
	switch {
	case src.GetDeleted() && !Archived(src):
		ch.Action, ch.Reason = ImportSkip, "deleted in the export"
		return ch, nil
	case expired(src, b.now):
		ch.Action, ch.Reason = ImportSkip, "expired"
		return ch, nil
	}
	// An export's values are plain; a value sent compressed (as stored)
	// is decoded and checked against its size. size is not needed
	// otherwise: a hand-written file may leave it out.
	value := src.GetValue()
	if src.GetCompressed() {
		v, err := DecodeValue(src)
		if err != nil {
			return nil, badRequest("value", "%v", err)
		}
		value = v
	}
	c := &content{value: value, contentType: src.GetContentType(), memoryType: src.GetMemoryType(),
		importance: src.GetImportance(), tags: src.GetTags(), metadata: src.GetMetadata()}
	if err := validateContent(c); err != nil {
		return nil, err
	}
	archived := Archived(src)
	cur := b.cur(kh.Key)
	same := cur != nil && (!cur.Deleted || Archived(cur)) && b.s.sameContent(cur, c)
	switch {
	case same && Archived(cur) == archived:
		ch.Action = ImportUnchanged
		return ch, nil
	case same && archived:
		b.emit(archiveTombstone(cur, by, b.now))
		ch.Action = ImportArchive
		return ch, nil
	case cur == nil || cur.Deleted && !Archived(cur):
		ch.Action = ImportCreate
	case same:
		ch.Action = ImportRestore
	default:
		ch.Action = ImportUpdate
	}
	expires := src.GetExpiresUnixNano()
	if expires == 0 {
		expires = b.expiresAt(0, c.memoryType)
	}
	if _, err := b.putLike(kh.Key, c, b.s.encode(kh.Key, value, false), expires, by, memoryv1.ChangeKind_CHANGE_KIND_IMPORT, 0); err != nil {
		return nil, err
	}
	if archived {
		b.emit(archiveTombstone(b.cur(kh.Key), by, b.now))
	}
	return ch, nil
}

// sameContent reports whether e (a live or archived version) holds c's
// content: value, content type, memory type, importance, tags, metadata.
func (s *State) sameContent(e *memoryv1.Entry, c *content) bool {
	if e.ContentType != c.contentType || e.MemoryType != c.memoryType || e.Importance != c.importance ||
		!slices.Equal(e.Tags, c.tags) || !maps.Equal(e.Metadata, c.metadata) || int(e.Size) != len(c.value) {
		return false
	}
	v, err := DecodeValue(e)
	return err == nil && string(v) == string(c.value)
}
