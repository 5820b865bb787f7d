package erasure

import (
	"github.com/agentmem/agentmem/internal/sharedmem"
)

// EntryRef names an entry of a scope (what the read model lists for a
// metadata source).
type EntryRef struct {
	Kind sharedmem.Kind
	ID   string
	Key  string
}

// SessionListing is what the read model lists of one session.
type SessionListing struct {
	ID string
	// Data are the large-data objects the session owns ("session:<id>").
	Data []string
	// Copies are the entries of any scope naming the session as their
	// source (SessionSources).
	Copies []EntryRef
}

// Listing is what the read model lists for a plan: the sessions it
// covers (one for a session erase, the user's for a user erase) and the
// entries naming the user as their source (UserSources).
type Listing struct {
	Sessions []SessionListing
	Copies   []EntryRef
}

// Plan returns the items an erase of t removes, given what the read model
// lists (l; nothing is listed for a scope or an entry), in the order they
// are removed:
//
//   - a session: the session, its session scope, its large data, then the
//     entries elsewhere that came from it;
//   - a user: each of its sessions as above, the user's scope, then the
//     entries elsewhere that came from the user;
//   - a scope: the scope; an entry: the entry.
//
// An item appears once; an entry of a scope the plan removes whole is not
// listed on its own. Plan is pure: the same target and listing give the
// same plan.
func Plan(t Target, l Listing) []Item {
	var items []Item
	switch t.Kind {
	case TargetScope:
		return []Item{ScopeItem(t.Scope, t.ID)}
	case TargetEntry:
		return []Item{EntryItem(t.Scope, t.ID, t.Key)}
	case TargetSession, TargetUser:
		for _, s := range l.Sessions {
			items = append(items, SessionItem(s.ID), ScopeItem(sharedmem.KindSession, s.ID))
			for _, d := range s.Data {
				items = append(items, DataItem(d))
			}
			items = appendEntries(items, s.Copies)
		}
		if t.Kind == TargetUser {
			items = append(items, ScopeItem(sharedmem.KindUser, t.ID))
			items = appendEntries(items, l.Copies)
		}
	}
	return dedupe(items)
}

func appendEntries(items []Item, refs []EntryRef) []Item {
	for _, r := range refs {
		items = append(items, EntryItem(r.Kind, r.ID, r.Key))
	}
	return items
}

// dedupe drops repeated items (keeping the first) and the entries of
// scopes removed whole.
func dedupe(items []Item) []Item {
	whole := map[Item]bool{}
	for _, it := range items {
		if it.Kind == ItemScope {
			whole[it] = true
		}
	}
	seen := make(map[Item]bool, len(items))
	out := items[:0]
	for _, it := range items {
		if seen[it] || it.Kind == ItemEntry && whole[it.scope()] {
			continue
		}
		seen[it] = true
		out = append(out, it)
	}
	return out
}
