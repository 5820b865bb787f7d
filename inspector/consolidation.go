package inspector

import (
	"sort"
	"strings"

	"github.com/agentmem/agentmem/consolidation"
	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// consolInfo is an entry's consolidation metadata (package consolidation), for the
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
	consolidation.LegacySourceSessionKey: true, consolidation.SourceSessionKey: true, consolidation.SourceUserKey: true,
	consolidation.MetaMessages: true, consolidation.MetaConfidence: true, consolidation.MetaConsolidated: true,
	consolidation.MetaReplaces: true, consolidation.MetaProposedFor: true, consolidation.MetaExtractor: true,
	consolidation.MetaMergedBy: true, consolidation.MetaCommand: true,
	consolidation.MetaSubject: true, consolidation.MetaAttribute: true, consolidation.MetaValue: true, // restated by the value itself
}

// consolOf reads e's metadata (nil when it has none).
func consolOf(e *memoryv1.Entry) *consolInfo {
	md := e.GetMetadata()
	if len(md) == 0 {
		return nil
	}
	c := &consolInfo{Session: consolidation.SourceSession(md), User: md[consolidation.SourceUserKey],
		Confidence: md[consolidation.MetaConfidence], Into: md[consolidation.MetaConsolidated], Replaces: md[consolidation.MetaReplaces],
		ProposedFor: md[consolidation.MetaProposedFor], Extractor: md[consolidation.MetaExtractor], MergedBy: md[consolidation.MetaMergedBy]}
	if m := md[consolidation.MetaMessages]; m != "" {
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
