package segmented

import (
	"slices"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// scratch returns an independent copy of s for benchmarks: it shares nested
// messages (never modified in place) but owns its top-level snapshot and
// slices; its indexes are built on first use.
func (s *State) scratch() *State {
	c := &State{tok: s.tok}
	if p := s.snap; p != nil {
		c.snap = &memoryv1.SessionSnapshot{
			SessionId:       p.SessionId,
			UserId:          p.UserId,
			App:             p.App,
			Project:         p.Project,
			AgentId:         p.AgentId,
			Status:          p.Status,
			Version:         p.Version,
			LastSeq:         p.LastSeq,
			Config:          p.Config,
			Rom:             p.Rom,
			PendingRom:      p.PendingRom,
			Kernel:          p.Kernel,
			L2:              slices.Clone(p.L2),
			Promoted:        slices.Clone(p.Promoted),
			L1:              slices.Clone(p.L1),
			SessionState:    slices.Clone(p.SessionState),
			NextMessageSeq:  p.NextMessageSeq,
			Turn:            p.Turn,
			TotalMessages:   p.TotalMessages,
			ArchivedL2Count: p.ArchivedL2Count,
			Compressions:    p.Compressions,
			CreatedUnixNano: p.CreatedUnixNano,
			UpdatedUnixNano: p.UpdatedUnixNano,
			RecentCommands:  slices.Clone(p.RecentCommands),
			NextSummarySeq:  p.NextSummarySeq,
		}
	}
	return c
}
