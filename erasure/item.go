package erasure

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/actors"
	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/largedata"
)

// ItemKind says what a plan item removes.
type ItemKind uint8

// The kinds of plan items.
const (
	// ItemSession is a session aggregate: its messages, its snapshot.
	ItemSession ItemKind = iota + 1
	// ItemScope is a scope aggregate, whole (a session's own scope too).
	ItemScope
	// ItemEntry is one key of a scope: the scope is rewritten without it.
	ItemEntry
	// ItemData is one large-data object with its reference.
	ItemData
)

// Item is one thing a plan removes, each by a removal of its own. Its
// String is how the ledger spells it (LogRemoval.planned, and the
// aggregates of LogRemoval.erased and rewritten), and ParseItem reads it
// back; that spelling is part of the log's format:
//
//	session.<id>                 ItemSession
//	<scope log kind>.<id>        ItemScope (session_scope.<id> for a session's scope)
//	data.<id>                    ItemData
//	entry:<kind>:<id>:#<sha256>  ItemEntry (kind is the scope kind, "session" for a session's scope)
//
// An entry is spelled by the SHA-256 of its key (hex), never the key: a
// key may be made of a user's words (consolidation's episode keys are),
// and the ledger outlives what it erased. Plans written before spelled the
// key itself ("entry:<kind>:<id>:<key>"; keys hold no '#'): ParseItem
// reads both.
type Item struct {
	Kind ItemKind
	// Scope is the scope kind of an ItemScope or ItemEntry.
	Scope sharedmem.Kind
	// ID is the session, scope or data id.
	ID string
	// Key is the key of an ItemEntry when it is known ("" for an entry
	// read from a plan spelled by digest); KeySum is its SHA-256, in hex.
	Key, KeySum string
}

// SessionItem is session id.
func SessionItem(id string) Item { return Item{Kind: ItemSession, ID: id} }

// ScopeItem is scope kind:id, whole.
func ScopeItem(kind sharedmem.Kind, id string) Item {
	return Item{Kind: ItemScope, Scope: kind, ID: id}
}

// EntryItem is key of scope kind:id.
func EntryItem(kind sharedmem.Kind, id, key string) Item {
	return Item{Kind: ItemEntry, Scope: kind, ID: id, Key: key, KeySum: keySum(key)}
}

func keySum(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// sum is the entry's key digest as EraseAggregate.key_sha256 carries it.
func (it Item) sum() []byte {
	b, _ := hex.DecodeString(it.KeySum) // checked by ParseItem
	return b
}

// entryName is how a receipt names the entry: "<kind>:<id>:<key>", or
// "<kind>:<id>:#<sha256>" when the key is not known (a plan resumed).
func (it Item) entryName() string {
	if it.Key != "" {
		return string(it.Scope) + ":" + it.ID + ":" + it.Key
	}
	return string(it.Scope) + ":" + it.ID + ":#" + it.KeySum
}

// DataItem is large-data object id.
func DataItem(id string) Item { return Item{Kind: ItemData, ID: id} }

// String spells the item as the ledger holds it.
func (it Item) String() string {
	switch it.Kind {
	case ItemSession:
		return events.KindSession + "." + it.ID
	case ItemScope:
		return actors.AggregateKind(it.Scope) + "." + it.ID
	case ItemEntry:
		return "entry:" + string(it.Scope) + ":" + it.ID + ":#" + it.KeySum
	case ItemData:
		return largedata.Kind + "." + it.ID
	}
	return fmt.Sprintf("item(%d).%s", it.Kind, it.ID)
}

// scope is the scope an ItemScope or ItemEntry is in.
func (it Item) scope() Item { return ScopeItem(it.Scope, it.ID) }

// ErrBadItem is returned by ParseItem for a spelling no item has.
var ErrBadItem = errors.New("erasure: not a plan item")

// ParseItem reads an item as Item.String spells it.
func ParseItem(s string) (Item, error) {
	bad := func(why string) (Item, error) { return Item{}, fmt.Errorf("%w: %q: %s", ErrBadItem, s, why) }
	if rest, ok := strings.CutPrefix(s, "entry:"); ok {
		parts := strings.SplitN(rest, ":", 3)
		if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
			return bad("an entry is entry:<kind>:<id>:<key>")
		}
		k, err := sharedmem.ParseKind(parts[0])
		if err != nil {
			return bad("unknown scope kind")
		}
		if sum, ok := strings.CutPrefix(parts[2], "#"); ok {
			if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size || sum != hex.EncodeToString(b) {
				return bad("an entry's digest is 64 lowercase hex digits")
			}
			return Item{Kind: ItemEntry, Scope: k, ID: parts[1], KeySum: sum}, nil
		}
		return EntryItem(k, parts[1], parts[2]), nil // a plan written before
	}
	kind, id, ok := strings.Cut(s, ".")
	if !ok || id == "" || strings.Contains(id, ".") {
		return bad("an aggregate is <kind>.<id>")
	}
	switch kind {
	case events.KindSession:
		return SessionItem(id), nil
	case largedata.Kind:
		return DataItem(id), nil
	case actors.SessionScopeKind:
		return ScopeItem(sharedmem.KindSession, id), nil
	}
	k, err := sharedmem.ParseKind(kind)
	if err != nil || k == sharedmem.KindSession {
		return bad("unknown kind")
	}
	return ScopeItem(k, id), nil
}

// TargetKind says what an erase request names.
type TargetKind uint8

// The kinds of erase targets.
const (
	// TargetSession: a session, its session scope, its large data, and the
	// entries elsewhere that came from it.
	TargetSession TargetKind = iota + 1
	// TargetUser: every session of the user (as TargetSession), the user's
	// scope, and the entries elsewhere that came from the user.
	TargetUser
	// TargetScope: one scope, whole.
	TargetScope
	// TargetEntry: one key of a scope, every version.
	TargetEntry
)

// Target is what an erase request names. Its String is the removal's
// target (LogRemoval.target): "session:<id>", "user:<id>",
// "scope:<kind>:<id>" or "entry:<kind>:<id>:#<sha256 of the key>" (the
// ledger never holds a key, as for Item).
type Target struct {
	Kind TargetKind
	// Scope is the scope kind of a TargetScope or TargetEntry.
	Scope sharedmem.Kind
	// ID is the session, user or scope id.
	ID string
	// Key is the key of a TargetEntry.
	Key string
}

// SessionTarget names session id.
func SessionTarget(id string) Target { return Target{Kind: TargetSession, ID: id} }

// UserTarget names user id.
func UserTarget(id string) Target { return Target{Kind: TargetUser, ID: id} }

// ScopeTarget names scope kind:id.
func ScopeTarget(kind sharedmem.Kind, id string) Target {
	return Target{Kind: TargetScope, Scope: kind, ID: id}
}

// EntryTarget names key of scope kind:id.
func EntryTarget(kind sharedmem.Kind, id, key string) Target {
	return Target{Kind: TargetEntry, Scope: kind, ID: id, Key: key}
}

// Named is how a receipt names the target: as String, but an entry by its
// key (a receipt goes to the caller who named the key; the ledger never
// holds it).
func (t Target) Named() string {
	if t.Kind == TargetEntry {
		return "entry:" + string(t.Scope) + ":" + t.ID + ":" + t.Key
	}
	return t.String()
}

// String spells the target as the removal records it.
func (t Target) String() string {
	switch t.Kind {
	case TargetSession:
		return "session:" + t.ID
	case TargetUser:
		return "user:" + t.ID
	case TargetScope:
		return "scope:" + string(t.Scope) + ":" + t.ID
	case TargetEntry:
		return "entry:" + string(t.Scope) + ":" + t.ID + ":#" + keySum(t.Key)
	}
	return fmt.Sprintf("target(%d):%s", t.Kind, t.ID)
}
