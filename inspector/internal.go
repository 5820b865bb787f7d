package inspector

import (
	"strings"

	"github.com/agentmem/agentmem/consolidation"
)

// internalPrefixes are the key prefixes of consolidation's bookkeeping in
// a scope: a run's marker (consolidated/<session>) and the values waiting
// for review (review/<key>). They are no facts of the scope, so the scope
// page shows them apart, collapsed.
var internalPrefixes = []string{consolidation.MarkerPrefix, consolidation.ReviewPrefix}

func isInternalKey(key string) bool {
	for _, p := range internalPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
