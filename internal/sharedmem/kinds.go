package sharedmem

import (
	"fmt"
	"strings"
)

// Kind is the kind of a scope; with an id it names one aggregate, on subject
// mem.ev.<kind>.<id>.
type Kind string

// The scope kinds.
const (
	KindAgent    Kind = "agent"
	KindGlobal   Kind = "global"
	KindWorkflow Kind = "workflow"
	KindSwarm    Kind = "swarm"
	KindDebate   Kind = "debate"
	KindSession  Kind = "session"
	KindUser     Kind = "user"
	KindApp      Kind = "app"
	KindProject  Kind = "project"
	// KindAgentType is the memory every agent of one type shares
	// (agent_type:<type>, e.g. agent_type:database-specialist): what one
	// specialist learns, the others of its kind read. The type is a
	// property of a verified identity (tenancy), so the scope is reachable
	// by what an agent is, not by what a request says.
	KindAgentType Kind = "agent_type"
)

// GlobalID is the only id of the global scope.
const GlobalID = "global"

// MaxIDBytes bounds a scope id.
const MaxIDBytes = 128

var kinds = []Kind{KindAgent, KindGlobal, KindWorkflow, KindSwarm, KindDebate, KindSession, KindUser, KindApp, KindProject, KindAgentType}

// Kinds returns every scope kind, in a fixed order.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// ParseKind returns the Kind named s, or a 400 *Rejection on field "kind"
// listing the valid kinds.
func ParseKind(s string) (Kind, error) {
	for _, k := range kinds {
		if string(k) == s {
			return k, nil
		}
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return "", badRequest("kind", "unknown kind %q (valid: %s)", s, strings.Join(names, ", "))
}

// Elevated reports whether writes to scopes of this kind need an elevated
// caller (app and project). The check is enforced by NATS permissions, not
// by this package.
func (k Kind) Elevated() bool { return k == KindApp || k == KindProject }

// ParseScopeName is ScopeID reversed: the kind and id of a scope's name
// ("<kind>:<id>", or "global"), as a context's memory items name their
// scope. It rejects what ScopeID would.
func ParseScopeName(name string) (Kind, string, error) {
	kindName, id, found := strings.Cut(name, ":")
	if !found {
		kindName, id = name, GlobalID
	}
	k, err := ParseKind(kindName)
	if err != nil {
		return "", "", err
	}
	if _, err := ScopeID(k, id); err != nil {
		return "", "", err
	}
	return k, id, nil
}

// ScopeID returns the scope's name, "<kind>:<id>" ("global" for the global
// scope, whose id must be "global"). Other ids are 1..128 bytes of
// [A-Za-z0-9_-]. It rejects with 400 on field "kind" or "id".
func ScopeID(k Kind, id string) (string, error) {
	if _, err := ParseKind(string(k)); err != nil {
		return "", err
	}
	if k == KindGlobal {
		if id != GlobalID {
			return "", badRequest("id", "the global scope has id %q, not %q", GlobalID, id)
		}
		return GlobalID, nil
	}
	field := "id"
	if k == KindAgent {
		field = "agent_id"
	}
	if err := validateID(field, id); err != nil {
		return "", err
	}
	return string(k) + ":" + id, nil
}

func validateID(field, id string) error {
	if id == "" || len(id) > MaxIDBytes {
		return badRequest(field, "must be 1..%d bytes, got %d", MaxIDBytes, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !isAlnum(c) && c != '_' && c != '-' {
			return badRequest(field, "byte %d (%s) is not one of [A-Za-z0-9_-]", i, ByteName(c))
		}
	}
	return nil
}

// ByteName names one byte of an input for an error: the character quoted
// when it is printable ASCII, else its value in hex (a byte of a UTF-8
// sequence is no character of its own: 0xC3, not 'Ã').
func ByteName(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("0x%02X", c)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
