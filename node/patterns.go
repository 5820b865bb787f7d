package node

import (
	"strings"

	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/projections"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// PatternKeyPrefix is where pattern libraries live: library L is the live
// entries patterns/L/<name> of a scope, each value one pattern, in key
// order. A session of app A finds L in the scope app:A when that scope
// holds any pattern of L, else in the global scope. The global scope is
// read by every principal, so a global library is no secret, and its
// writers are the node's writers; an app's library is written by an admin
// (an app scope's writer) and reaches only the sessions of that app, whose
// creators are its members.
const PatternKeyPrefix = segmented.PatternKeyPrefix

// prefixLister lists a scope's entries by key prefix: the projection's
// store, or the split projection's router.
type prefixLister interface {
	EntriesWithPrefix(aggregateKind, scopeID, prefix string, limit int) ([]*memoryv1.Entry, error)
}

// libraries reads pattern libraries from the projection for the session
// actors (segmented.LibrarySource). The projection may lag a library's
// write by milliseconds: a session takes what it read, recorded in its
// ROM, and a later turn reads the libraries again.
func libraries(s prefixLister) segmented.LibrarySource {
	return func(app string, names []string) ([]segmented.Library, error) {
		out := make([]segmented.Library, len(names))
		for i, name := range names {
			out[i] = segmented.Library{Name: name}
			if app != "" {
				ps, err := libraryPatterns(s, sharedmem.KindApp, app, name)
				if err != nil {
					return nil, err
				}
				if len(ps) > 0 {
					out[i].Patterns, out[i].Scope = ps, string(sharedmem.KindApp)+":"+app
					continue
				}
			}
			ps, err := libraryPatterns(s, sharedmem.KindGlobal, sharedmem.GlobalID, name)
			if err != nil {
				return nil, err
			}
			out[i].Patterns = ps
		}
		return out, nil
	}
}

// libraryPatterns reads library name's patterns in scope kind:id.
func libraryPatterns(s prefixLister, kind sharedmem.Kind, id, name string) ([]string, error) {
	prefix := PatternKeyPrefix + name + "/"
	es, err := s.EntriesWithPrefix(projections.ScopeLogKind(kind), id, prefix, segmented.MaxLibraryPatterns)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if strings.Contains(strings.TrimPrefix(e.GetKey(), prefix), "/") {
			continue // another library's (patterns/L/sub/…) is not L's
		}
		out = append(out, string(e.GetValue()))
	}
	return out, nil
}
