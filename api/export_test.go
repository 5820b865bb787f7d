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

// OperationSubjects are the declared operations: name → NATS subject.
func OperationSubjects() map[string]string {
	out := map[string]string{}
	for _, op := range operations {
		out[op.name] = op.subject
	}
	return out
}
