package segmented

// CandidateKey is what the node's search for an append's candidates
// depends on of the session: which searches run (Recall: the session
// assembles recall and has compressed, so its swap holds something to
// recall; Memory: it assembles memory) and the owners naming its memory
// scopes. Two equal keys give the same search for the same message and
// caller. The node may search with a key it remembers; the session actor
// checks it against its own before deciding (see actors.Append).
//
// Cross: the session recalls from its user's other sessions (a session
// without a user: from its agent's other sessions without a user), from
// its first user message on, whether or not it has compressed; Depth is
// how many of their messages to search for (EarlierDepth of the budget).
type CandidateKey struct {
	Recall, Memory, Cross bool
	// Summaries: the session archived L2 summaries and offers them
	// (AssemblyConfig.archived_summaries): the swap search asks for the
	// matching ones too.
	Summaries                 bool
	Depth                     int
	Agent, User, Project, App string
	// AgentType names the scope agent_type:<type> the session shares with
	// the other agents of its type.
	AgentType string
}

// EarlierDepth is how many messages of earlier sessions the node searches
// for a session of budget tokens: enough to fill the room with turns of
// about earlierTurnTokens if they all earn it, within
// [RecallOffered, MaxEarlierCandidates].
func EarlierDepth(budget uint64) int {
	return int(min(max(budget/earlierTurnTokens, RecallOffered), MaxEarlierCandidates))
}

// earlierTurnTokens: a conversational turn with its day and source, as the
// recalled section shows it, is 30-60 tokens.
const earlierTurnTokens = 20

// CandidateKey returns the session's key; wants is false when the session
// does not assemble its context (no candidates are searched for it).
func (s *State) CandidateKey() (k CandidateKey, wants bool) {
	if !s.assembles() {
		return CandidateKey{}, false
	}
	a, p := s.Assembly(), s.snap
	return CandidateKey{
		Recall:    a.GetRecallPct() > 0 && p.GetCompressions() > 0,
		Memory:    a.GetMemoryPct() > 0,
		Cross:     a.GetRecallPct() > 0 && !a.GetNoCrossSession() && (p.GetUserId() != "" || p.GetAgentId() != ""),
		Summaries: a.GetRecallPct() > 0 && a.GetArchivedSummaries() && p.GetArchivedL2Count() > 0,
		Depth:     EarlierDepth(s.Budget()),
		Agent:     p.GetAgentId(),
		User:      p.GetUserId(),
		Project:   p.GetProject(),
		App:       p.GetApp(),
		AgentType: p.GetAgentType(),
	}, true
}
