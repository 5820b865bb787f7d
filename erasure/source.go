package erasure

// Metadata naming where an entry came from. An entry written into a scope
// from a session (a value published from a session scope, a fact or an
// episode consolidation extracted) names its source session in
// SourceSessionKey and, when the session has a user, that user in
// SourceUserKey: erasing the session or the user finds the entry by them,
// in any scope. These two keys are the only ones written; erase also reads
// LegacySourceSessionKey, which consolidation wrote before (alone when the
// session had no user).
//
// An episode summary has several sources: besides its latest source's
// pair it carries SummarySessionKey+id = id for each source session and
// SummaryUserKey+id = id for each source user.
const (
	SourceSessionKey = "agentmem.source_session"
	SourceUserKey    = "agentmem.source_user"

	// LegacySourceSessionKey is read, never written.
	LegacySourceSessionKey = "source_session"

	SummarySessionKey = "agentmem.summary_session." // + session id = session id
	SummaryUserKey    = "agentmem.summary_user."    // + user id = user id
)

// SourceSession is the session metadata md names as its source ("" for
// none): SourceSessionKey, or LegacySourceSessionKey on an entry written
// before it.
func SourceSession(md map[string]string) string {
	if s := md[SourceSessionKey]; s != "" {
		return s
	}
	return md[LegacySourceSessionKey]
}

// Source is one metadata pair that marks an entry as coming from a
// session or a user: an entry any version of which holds Name = Value is
// a copy erased with it.
type Source struct{ Name, Value string }

// SessionSources are the pairs marking an entry as coming from session id.
func SessionSources(id string) []Source {
	return []Source{{SourceSessionKey, id}, {LegacySourceSessionKey, id}, {SummarySessionKey + id, id}}
}

// UserSources are the pairs marking an entry as coming from user id.
func UserSources(id string) []Source {
	return []Source{{SourceUserKey, id}, {SummaryUserKey + id, id}}
}
