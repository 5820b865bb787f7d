package limits

import (
	"fmt"

	"github.com/agentmem/agentmem/api/wire"
)

// Query limits: a recall page, search hits, a query's bytes.
const (
	MaxRecallLimit = 50
	MaxSearchLimit = 20
	MaxQueryBytes  = 4 << 10
)

// CheckSearch enforces the search limits shared by session and entry
// search.
func CheckSearch(limit uint32, query string) *wire.Error {
	switch {
	case limit > MaxSearchLimit:
		return &wire.Error{Code: 400, Field: "limit", Message: fmt.Sprintf("%d, at most %d", limit, MaxSearchLimit)}
	case len(query) > MaxQueryBytes:
		return &wire.Error{Code: 413, Field: "query", Message: fmt.Sprintf("%d bytes, at most %d", len(query), MaxQueryBytes)}
	}
	return nil
}
