package consolidation

import (
	"strings"

	"github.com/agentmem/agentmem/erasure"

	memoryv1 "github.com/agentmem/agentmem/proto/memory/v1"
)

// Metadata keys of the entries a run writes.
const (
	// SourceSessionKey names the session an entry came from, on every
	// entry a run writes (facts, episodes, the digest, summaries, the
	// marker): a session erase finds them by it (the erasure package owns
	// the keys).
	SourceSessionKey = erasure.SourceSessionKey
	// SourceUserKey names the session's user, when it has one: a user
	// erase finds what the user said, in any scope.
	SourceUserKey = erasure.SourceUserKey
	// SaidKey is when the statement was said (Unix nanoseconds, decimal):
	// the said time of an imported message, else its append time. On the
	// digest: when the session's first message was said; on the marker,
	// its last; on an episode summary, its latest episode's.
	SaidKey = "agentmem.said_unix_nano"
	// DateKey is the date the statement names, resolved ("2023-05-07",
	// "2023-05", "the week of 2023-05-01"); on the digest the session's
	// day (or "<first> to <last>").
	DateKey = "agentmem.date"

	MetaMessages     = "source_messages"
	MetaConfidence   = "confidence"
	MetaSubject      = "subject"
	MetaAttribute    = "attribute"
	MetaValue        = "fact_value"
	MetaExtractor    = "extractor"
	MetaCommand      = "consolidation_command"
	MetaReplaces     = "replaces"
	MetaProposedFor  = "proposed_for"
	MetaConsolidated = "consolidated_into"
	MetaMergedBy     = "merged_by"

	// LegacySourceSessionKey is the session key entries written before
	// SourceSessionKey was the only one carry ("source_session"); runs no
	// longer write it, readers of old entries fall back to it.
	LegacySourceSessionKey = erasure.LegacySourceSessionKey

	// Metadata of an episode summary.
	MetaSummarizes    = "summarizes" // sources, "key@version" comma-separated
	MetaEpisodes      = "episodes"   // episodes counted
	MetaWorked        = "worked"     // of which worked
	MetaTask          = "task"
	SummarySessionKey = erasure.SummarySessionKey // + session id = session id
	SummaryUserKey    = erasure.SummaryUserKey    // + user id = user id
)

// Keys and names.
const (
	// By is who a run's writes are attributed to.
	By = "consolidation"
	// ReviewPrefix: a value waiting for review is filed under
	// review/<key> (strategy "review").
	ReviewPrefix = "review/"
	// MarkerPrefix: a run writes consolidated/<session> last.
	MarkerPrefix = "consolidated/"
	// DigestPrefix: a session's digest is episode/session/<session>.
	DigestPrefix = "episode/session/"
)

// MarkerKey is the key of session id's marker.
func MarkerKey(id string) string { return MarkerPrefix + id }

// DigestKey is the key of session id's digest.
func DigestKey(id string) string { return DigestPrefix + id }

// HiddenFromMemory reports the entries a context's memory section never
// shows: markers, values waiting for review, and values consolidated into
// another key (stale).
func HiddenFromMemory(e *memoryv1.Entry) bool {
	k := e.GetKey()
	return strings.HasPrefix(k, MarkerPrefix) || strings.HasPrefix(k, ReviewPrefix) || e.GetMetadata()[MetaConsolidated] != ""
}

// SourceSession is the session an entry names as its source (the key
// runs write, else the legacy one).
func SourceSession(md map[string]string) string { return erasure.SourceSession(md) }
