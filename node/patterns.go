package node

import (
	"strings"

	"github.com/agentmem/agentmem/internal/segmented"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/projections"
)

// PatternKeyPrefix is where pattern libraries live: library L is the global
// scope's live entries patterns/L/<name>, each value one pattern, in key
// order. The global scope is read by every principal, so a library is no
// secret; its writers are the node's writers.
const PatternKeyPrefix = "patterns/"

// libraries reads pattern libraries from the projection for the session
// actors (segmented.LibrarySource). The projection may lag a library's
// write by milliseconds: a session takes what it read, recorded in its
// ROM, and a later turn reads the libraries again.
func libraries(s *projections.Store) segmented.LibrarySource {
	return func(names []string) ([]segmented.Library, error) {
		out := make([]segmented.Library, len(names))
		for i, name := range names {
			prefix := PatternKeyPrefix + name + "/"
			es, err := s.EntriesWithPrefix(projections.ScopeLogKind(sharedmem.KindGlobal), sharedmem.GlobalID, prefix, segmented.MaxLibraryPatterns)
			if err != nil {
				return nil, err
			}
			out[i] = segmented.Library{Name: name}
			for _, e := range es {
				if strings.Contains(strings.TrimPrefix(e.GetKey(), prefix), "/") {
					continue // another library's (patterns/L/sub/…) is not L's
				}
				out[i].Patterns = append(out[i].Patterns, string(e.GetValue()))
			}
		}
		return out, nil
	}
}
