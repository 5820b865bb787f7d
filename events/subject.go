package events

import (
	"fmt"
	"strings"
)

// Stream and subject layout. One aggregate is one subject:
//
//	mem.ev.session.<id>
//	mem.ev.agent.<id>
//	mem.ev.<scope-kind>.<scope-id>
const (
	// StreamName is the default JetStream stream holding the log.
	StreamName = "MEM"
	// SubjectPrefix starts every log subject; the stream covers SubjectPrefix+".>".
	SubjectPrefix = "mem.ev"
	// MaxIDLen is the longest accepted id.
	MaxIDLen = 128

	KindSession = "session"
	KindAgent   = "agent"
)

// ValidateID checks id against [A-Za-z0-9_-]{1,128}: no dots, no wildcards,
// no spaces, so an id can never produce a malformed subject. The error is a
// *FieldError naming field, matching errors.Is(err, ErrInvalidID).
func ValidateID(field, id string) error {
	if id == "" {
		return &FieldError{Field: field, Reason: "must not be empty"}
	}
	if len(id) > MaxIDLen {
		return &FieldError{Field: field, Reason: fmt.Sprintf("longer than %d bytes (%d)", MaxIDLen, len(id))}
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return &FieldError{Field: field, Reason: fmt.Sprintf("invalid byte %s at %d (allowed: A-Z a-z 0-9 _ -)", byteName(id[i]), i)}
		}
	}
	return nil
}

// byteName is the character quoted when printable ASCII, else the byte in
// hex (a byte of a UTF-8 sequence is no character of its own).
func byteName(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("0x%02X", c)
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// SessionSubject is the subject of session id. The id must be valid (ValidateID).
func SessionSubject(id string) string { return ScopeSubject(KindSession, id) }

// AgentSubject is the subject of agent id. The id must be valid (ValidateID).
func AgentSubject(id string) string { return ScopeSubject(KindAgent, id) }

// ScopeSubject is the subject "mem.ev.<kind>.<id>". Kind and id must be
// valid (ValidateID); use ParseSubject to check a subject from outside.
func ScopeSubject(kind, id string) string {
	return SubjectPrefix + "." + kind + "." + id
}

// ParseSubject splits a log subject into its kind and id, validating both.
// Errors match ErrInvalidID.
func ParseSubject(subj string) (kind, id string, err error) {
	rest, ok := strings.CutPrefix(subj, SubjectPrefix+".")
	if !ok {
		return "", "", &FieldError{Field: "subject", Reason: fmt.Sprintf("%q does not start with %s.", subj, SubjectPrefix)}
	}
	kind, id, ok = strings.Cut(rest, ".")
	if !ok {
		return "", "", &FieldError{Field: "subject", Reason: fmt.Sprintf("%q is not %s.<kind>.<id>", subj, SubjectPrefix)}
	}
	if err := ValidateID("subject kind", kind); err != nil {
		return "", "", err
	}
	if err := ValidateID("subject id", id); err != nil {
		return "", "", err
	}
	return kind, id, nil
}

// CommandKey is the deduplication key of a command: its id scoped to the
// verified writer ("" without tenancy), so one writer's id never
// suppresses another writer's command. Ids and writers never hold '/', so
// the key is unambiguous.
func CommandKey(writer, commandID string) string {
	if writer == "" || commandID == "" {
		return commandID
	}
	return writer + "/" + commandID
}
