package inspector

import (
	"sort"
	"strings"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/erasure"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// consolInfo is an entry's consolidation metadata (DESIGN §13), for the
// scopes page: where a fact came from and what became of it.
type consolInfo struct {
	Session, User string   // the source session and its user
	Messages      []string // the source message ids
	Confidence    string
	Into          string // consolidated_into: the key that replaced it
	Replaces      string // the value it replaces
	ProposedFor   string // a value waiting for review: the key it is for
	Extractor     string
	MergedBy      string
	// Other is the rest of the metadata, "key=value", sorted.
	Other []string
}

// consolKeys are the metadata keys consolInfo names (the rest go to
// Other, except the command id, which says nothing to a reader).
var consolKeys = map[string]bool{
	erasure.LegacySourceSessionKey: true, api.SourceSessionKey: true, api.SourceUserKey: true, api.MetaMessages: true,
	api.MetaConfidence: true, api.MetaConsolidated: true, api.MetaReplaces: true, api.MetaProposedFor: true,
	api.MetaExtractor: true, api.MetaMergedBy: true, api.MetaCommand: true,
	api.MetaSubject: true, api.MetaAttribute: true, api.MetaValue: true, // restated by the value itself
}

// consolOf reads e's metadata (nil when it has none).
func consolOf(e *memoryv1.Entry) *consolInfo {
	md := e.GetMetadata()
	if len(md) == 0 {
		return nil
	}
	c := &consolInfo{Session: erasure.SourceSession(md), User: md[api.SourceUserKey], Confidence: md[api.MetaConfidence],
		Into: md[api.MetaConsolidated], Replaces: md[api.MetaReplaces], ProposedFor: md[api.MetaProposedFor],
		Extractor: md[api.MetaExtractor], MergedBy: md[api.MetaMergedBy]}
	if m := md[api.MetaMessages]; m != "" {
		c.Messages = strings.Split(m, ",")
	}
	for k, v := range md {
		if !consolKeys[k] {
			c.Other = append(c.Other, k+"="+v)
		}
	}
	sort.Strings(c.Other)
	return c
}

// conflictRow is a value consolidation filed for review beside the key's
// current value (mem.v1.scope.<kind>.<id>.conflicts).
type conflictRow struct {
	Key             string
	Current         string // "" when the key holds none now
	CurrentVersion  uint64
	CurrentBy       string
	CurrentDeleted  bool
	Proposed        string
	ProposedVersion uint64
	ProposedWhen    string
	ProposedType    string
	Proposal        *consolInfo
	Diff            []diffLine
}

func conflictOf(c *memoryv1.Conflict) conflictRow {
	p, cur := c.GetProposed(), c.GetCurrent()
	row := conflictRow{Key: c.GetKey(), Proposed: valueText(p), ProposedVersion: p.GetVersion(), ProposedWhen: timeOf(p.GetUpdatedUnixNano()),
		ProposedType: memType(p.GetMemoryType()), Proposal: consolOf(p)}
	if cur != nil {
		row.CurrentVersion, row.CurrentBy, row.CurrentDeleted = cur.GetVersion(), cur.GetUpdatedBy(), cur.GetDeleted()
		if !cur.GetDeleted() {
			row.Current = valueText(cur)
		}
	}
	row.Diff = diffLines(row.Current, row.Proposed)
	return row
}
