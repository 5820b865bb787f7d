package erasure

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/agentmem/agentmem/events"
)

// Removal ids. Each is a valid id (events.ValidateID) and names the
// removal's ledger subject, mem.ev.removal.<id>. An id derived from what
// is removed makes a second attempt find the first one's records and
// resume it rather than begin another.

// RequestID is the removal id of an erase of t asked by principal with
// commandID: the same request retried names the same removal (and so
// resumes or answers it). Without a command id it is "" (Erase then makes
// a fresh one: every such request is new).
func RequestID(t Target, principal, commandID string) string {
	if commandID == "" {
		return ""
	}
	return "e" + digest(t.String()+"\x00"+principal+"\x00"+commandID)
}

// RetentionID is the removal id of the retention erase of session id: the
// same on every sweep.
func RetentionID(session string) string {
	return "t" + digest("retention\x00session\x00"+session)
}

// CompactionID is the removal id of the log-window compaction of subject
// whose first message is at seq: the same until that message is removed,
// so a compaction cut short before its purge is resumed by the next sweep.
func CompactionID(subject string, seq uint64) string {
	return "k" + digest("compact\x00"+subject+"\x00"+strconv.FormatUint(seq, 10))
}

// ItemRemovalID is the removal id of item of plan id
// (events.PlannedRemovalID of the item's spelling).
func ItemRemovalID(plan string, it Item) string { return events.PlannedRemovalID(plan, it.String()) }

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}
