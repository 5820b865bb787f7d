package sharedmem

import (
	"maps"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Import actions (memoryv1.ImportChange.action): what the key's current
// version becomes.
const (
	ImportCreate    = "create"
	ImportUpdate    = "update"
	ImportArchive   = "archive"
	ImportRestore   = "restore"
	ImportUnchanged = "unchanged"
	ImportSkip      = "skip"
)

// DecideImport decides an ImportEntriesRequest: each key's exported
// history, oldest first, is written as versions here, in order (see
// importKey), so the target keeps the values a key went through, with
// their metadata, and not only its last one. A key whose history here
// already ends with the exported versions is unchanged (so an import
// applied twice changes nothing); a key deleted or expired in the export is
// skipped. The events and one change per key, in the request's order, are
// returned. It rejects with 400 (no keys, a key, a value's content) or 413
// (more than MaxImportKeys keys, max_entries) and then writes nothing.
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

// importState is one state a key went through: a value with its content
// and expiry, live or archived. A key's history read as states drops its
// plain tombstones (delete, expiry, eviction: they hold no value), merges
// a live value directly followed by its archiving into one archived state,
// and equal neighbours into one, so the same history reads the same
// whether it is an export's or the versions an import wrote from it.
type importState struct {
	c        *content
	archived bool
	expires  int64
}

func (a importState) same(b importState) bool {
	return a.archived == b.archived && sameContents(a.c, b.c)
}

// appendState adds st to the states read so far.
func appendState(states []importState, st importState) []importState {
	if n := len(states); n > 0 {
		prev := states[n-1]
		switch {
		case prev.same(st):
			return states
		case st.archived && !prev.archived && sameContents(prev.c, st.c):
			states[n-1] = st
			return states
		}
	}
	return append(states, st)
}

// exportStates reads an exported history (values plain, or compressed as
// stored) as states, checking each value's content; field names the bad
// version.
func exportStates(versions []*memoryv1.Entry) ([]importState, error) {
	var out []importState
	for i, v := range versions {
		if v.GetDeleted() && !Archived(v) {
			continue
		}
		// size is not needed for a plain value: a hand-written file may
		// leave it out.
		value := v.GetValue()
		if v.GetCompressed() {
			d, err := DecodeValue(v)
			if err != nil {
				return nil, badRequest("versions["+strconv.Itoa(i)+"].value", "%v", err)
			}
			value = d
		}
		c := &content{value: value, contentType: v.GetContentType(), memoryType: v.GetMemoryType(),
			importance: v.GetImportance(), tags: v.GetTags(), metadata: v.GetMetadata()}
		if err := validateContent(c); err != nil {
			if r, ok := err.(*Rejection); ok {
				r.Field = "versions[" + strconv.Itoa(i) + "]." + r.Field
			}
			return nil, err
		}
		out = appendState(out, importState{c: c, archived: Archived(v), expires: v.GetExpiresUnixNano()})
	}
	return out, nil
}

// storedStates reads key's kept history here as states (a value that
// cannot be decoded reads as no state: it matches nothing).
func (s *State) storedStates(key string) []importState {
	kh, ok := s.index[key]
	if !ok {
		return nil
	}
	var out []importState
	for _, v := range kh.Versions {
		if v.Deleted && !Archived(v) {
			continue
		}
		value, err := DecodeValue(v)
		if err != nil {
			continue
		}
		c := &content{value: value, contentType: v.ContentType, memoryType: v.MemoryType,
			importance: v.Importance, tags: v.Tags, metadata: v.Metadata}
		out = appendState(out, importState{c: c, archived: Archived(v)})
	}
	return out
}

// applied is how many of want's first states have ends with, at most
// len(want): the exported versions the key's history here already holds
// as its newest ones.
func applied(have, want []importState) int {
	for k := min(len(have), len(want)); k > 0; k-- {
		tail := have[len(have)-k:]
		match := true
		for i := range k {
			if !tail[i].same(want[i]) {
				match = false
				break
			}
		}
		if match {
			return k
		}
	}
	return 0
}

// importKey adds the events importing one exported key to the batch: the
// exported states the key's history here does not already end with are
// written in order, each live value a new version (change IMPORT) and each
// archived one a new version archived after it (only the archiving when
// the current version holds the value already). A key whose current
// version here is deleted gets at least its newest exported state back.
// The change's action is what the current version becomes; versions
// counts the versions written.
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
	switch src := kh.Versions[len(kh.Versions)-1]; {
	case src.GetDeleted() && !Archived(src):
		ch.Action, ch.Reason = ImportSkip, "deleted in the export"
		return ch, nil
	case expired(src, b.now):
		ch.Action, ch.Reason = ImportSkip, "expired"
		return ch, nil
	}
	want, err := exportStates(kh.Versions)
	if err != nil {
		return nil, err
	}
	cur := b.cur(kh.Key)
	k := applied(b.s.storedStates(kh.Key), want)
	if cur == nil || cur.Deleted && !Archived(cur) {
		k = min(k, len(want)-1)
	}
	if k == len(want) {
		ch.Action = ImportUnchanged
		return ch, nil
	}
	newest := want[len(want)-1]
	same := cur != nil && (!cur.Deleted || Archived(cur)) && b.s.sameContent(cur, newest.c)
	switch {
	case cur == nil || cur.Deleted && !Archived(cur):
		ch.Action = ImportCreate
	case same && newest.archived && !Archived(cur):
		ch.Action = ImportArchive
	case same && !newest.archived && Archived(cur):
		ch.Action = ImportRestore
	default:
		ch.Action = ImportUpdate
	}
	for _, st := range want[k:] {
		n, err := b.importState(kh.Key, st, by)
		if err != nil {
			return nil, err
		}
		ch.Versions += uint32(n)
	}
	return ch, nil
}

// importState writes one state of key after its current version, and
// returns the versions written.
func (b *batch) importState(key string, st importState, by string) (int, error) {
	cur := b.cur(key)
	if st.archived && cur != nil && !cur.Deleted && b.s.sameContent(cur, st.c) {
		b.emit(archiveTombstone(cur, by, b.now))
		return 1, nil
	}
	expires := st.expires
	if expires == 0 {
		expires = b.expiresAt(0, st.c.memoryType)
	}
	if _, err := b.putLike(key, st.c, b.s.encode(key, st.c.value, false), expires, by, memoryv1.ChangeKind_CHANGE_KIND_IMPORT, 0); err != nil {
		return 0, err
	}
	if !st.archived {
		return 1, nil
	}
	b.emit(archiveTombstone(b.cur(key), by, b.now))
	return 2, nil
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

// sameContents reports whether a and b are the same content.
func sameContents(a, b *content) bool {
	return a.contentType == b.contentType && a.memoryType == b.memoryType && a.importance == b.importance &&
		slices.Equal(a.tags, b.tags) && maps.Equal(a.metadata, b.metadata) && string(a.value) == string(b.value)
}
