package replay

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// contextOf is st's context with its memory section's texts read from the
// scopes' events in the log (the log keeps references, DESIGN §12): what
// the node sent then, or, for an entry erased since, nothing.
func contextOf(ctx context.Context, l *link, st *segmented.State) *memoryv1.ContextReply {
	codec := events.NewCodec()
	values := map[string]map[string]string{} // subject → key\x00version → value
	get := func(scope, key string, version uint64) (string, bool) {
		subj, ok := scopeSubject(scope)
		if !ok {
			return "", false
		}
		vals, seen := values[subj]
		if !seen {
			vals = map[string]string{}
			values[subj] = vals
			_ = l.scan(ctx, subj, func(r record) error {
				b, err := events.DecodeBatch(r.Data)
				if err != nil {
					return nil
				}
				evs, err := codec.Unpack(b)
				if err != nil {
					return nil
				}
				for _, ev := range evs {
					e := entryOf(ev)
					if e == nil || e.GetDeleted() {
						continue
					}
					if v, err := sharedmem.DecodeValue(e); err == nil && utf8.Valid(v) {
						vals[versionKey(e.GetKey(), e.GetVersion())] = string(v)
					}
				}
				return nil
			})
		}
		v, ok := vals[versionKey(key, version)]
		return v, ok
	}
	return segmented.HydrateMemory(st.Context(), get)
}

// entryOf is the entry an event of a scope carries, if any.
func entryOf(ev any) *memoryv1.Entry {
	if c, ok := ev.(*memoryv1.EntryChanged); ok {
		return c.GetEntry()
	}
	return nil
}

func versionKey(key string, version uint64) string {
	return key + "\x00" + strconv.FormatUint(version, 10)
}

// scopeSubject is the log subject of a memory item's scope ("<kind>:<id>"
// or "global").
func scopeSubject(scope string) (string, bool) {
	kindName, id, found := strings.Cut(scope, ":")
	if !found {
		kindName, id = scope, sharedmem.GlobalID
	}
	kind, err := sharedmem.ParseKind(kindName)
	if err != nil || events.ValidateID("scope id", id) != nil {
		return "", false
	}
	return events.ScopeSubject(projections.ScopeLogKind(kind), id), true
}
