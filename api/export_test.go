package api

import "github.com/agentmem/agentmem/consolidation"

// For api_test: the summary consolidation writes, from the episodes it
// reads (a test writes it as a crash would leave it), and the command id
// of a fact it writes.
var (
	SummaryOf     = consolidation.SummaryOf
	EpisodeOf     = consolidation.EpisodeOf
	FactCommandID = consolidation.CommandID
)
