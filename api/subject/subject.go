// Package subject reads the request subjects of the memory API, one parser
// for every place that needs part of one: the dispatcher (which operation,
// which aggregate a request is placed on) and the operations (which
// session, user or scope). Before it each of them cut the subject its own
// way, and each disagreed a little on what a malformed one is.
//
// The subjects are
//
//	mem.v1.session.<id>.<op>      mem.v1.agent.<id>.<op>
//	mem.v1.user.<id>.<op>         mem.v1.scope.<kind>.<id>.<op>
//	mem.v1.sessions.<op>          mem.v1.data.<op>   mem.v1.tools.<op>
//
// Parse reads the layout only, without allocating (every request passes
// it); the accessors (Session, User, Scope) validate the ids they return.
package subject

import (
	"strings"

	"github.com/agentmem/agentmem/events"
	"github.com/agentmem/agentmem/internal/sharedmem"
)

// Prefix starts every request subject.
const Prefix = "mem.v1."

// The families: the token after Prefix.
const (
	Session  = "session"
	Sessions = "sessions"
	Agent    = "agent"
	Scope    = "scope"
	User     = "user"
	Data     = "data"
	Tools    = "tools"
)

// Subject is a request subject read by Parse. Kind is set under scope only;
// ID under session, agent, user and scope.
type Subject struct {
	Family, Kind, ID, Op string
}

// Error is a subject that is not one of the API's: a 400 naming the field
// the malformed part stands for (Status, as the service classifies
// rejections).
type Error struct{ Field, Message string }

func (e *Error) Error() string                 { return e.Field + ": " + e.Message }
func (e *Error) Status() (int, string, string) { return 400, e.Field, e.Message }

// What a malformed subject of each family is told it must be. An id with
// dots reads as more tokens than the family has: these say ids have none.
var (
	errSession = &Error{Field: "session_id", Message: "subject must be mem.v1.session.<id>.<op>"}
	errUser    = &Error{Field: "user_id", Message: "subject is not mem.v1.user.<id>.<op>"}
	errScope   = &Error{Field: "id", Message: "subject must be mem.v1.agent.<id>.<op> or mem.v1.scope.<kind>.<id>.<op> (ids have no dots)"}
	errPrefix  = &Error{Field: "subject", Message: "not a request subject of the memory API (mem.v1.<family>…)"}
)

// Parse reads s's layout: its family, the scope kind, the id and the
// operation. The tokens are not validated beyond their count (Session,
// User and Scope validate the ids).
func Parse(s string) (Subject, error) {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return Subject{}, errPrefix
	}
	family, rest, ok := strings.Cut(rest, ".")
	if !ok {
		return Subject{}, errPrefix
	}
	out := Subject{Family: family}
	var bad *Error
	switch family {
	case Sessions, Data, Tools:
		out.Op, bad = rest, errPrefix
	case Session, Agent, User:
		out.ID, out.Op, ok = strings.Cut(rest, ".")
		bad = familyError(family)
		if !ok {
			return Subject{}, bad
		}
	case Scope:
		out.Kind, rest, ok = strings.Cut(rest, ".")
		if ok {
			out.ID, out.Op, ok = strings.Cut(rest, ".")
		}
		if bad = errScope; !ok {
			return Subject{}, bad
		}
	default:
		return Subject{}, errPrefix
	}
	if out.Op == "" || strings.IndexByte(out.Op, '.') >= 0 {
		return Subject{}, bad
	}
	return out, nil
}

// familyError is the error of a malformed subject of family (with an id).
func familyError(family string) *Error {
	switch family {
	case Session:
		return errSession
	case User:
		return errUser
	}
	return errScope
}

// Aggregate is the id of the aggregate the subject addresses, the one a
// cluster places: a session's, an agent's or a scope's. Watches are not
// placed (any node reads the log), nor are the families without an id.
func (s Subject) Aggregate() (string, bool) {
	switch s.Family {
	case Session, Agent, Scope:
		if s.Op != "watch" {
			return s.ID, true
		}
	}
	return "", false
}

// SessionID is the validated id of mem.v1.session.<id>.<op>.
func (s Subject) SessionID() (string, error) {
	if s.Family != Session {
		return "", errSession
	}
	return s.ID, events.ValidateID("session_id", s.ID)
}

// UserID is the validated id of mem.v1.user.<id>.<op>.
func (s Subject) UserID() (string, error) {
	if s.Family != User {
		return "", errUser
	}
	return s.ID, events.ValidateID("user_id", s.ID)
}

// ScopeTarget is the scope of mem.v1.agent.<id>.<op> (an agent's) or
// mem.v1.scope.<kind>.<id>.<op>, its kind known and its id valid for it
// (the global scope's fixed id). An agent's memory has one address only:
// scope.agent.<id> is refused.
func (s Subject) ScopeTarget() (sharedmem.Kind, string, error) {
	var kind sharedmem.Kind
	switch s.Family {
	case Agent:
		kind = sharedmem.KindAgent
	case Scope:
		k, err := sharedmem.ParseKind(s.Kind)
		if err != nil {
			return "", "", err
		}
		if k == sharedmem.KindAgent {
			return "", "", &Error{Field: "kind", Message: "agent memory is addressed as mem.v1.agent.<id>.<op>"}
		}
		kind = k
	default:
		return "", "", errScope
	}
	if _, err := sharedmem.ScopeID(kind, s.ID); err != nil {
		return "", "", err
	}
	return kind, s.ID, nil
}

// SessionOf is Parse then SessionID.
func SessionOf(s string) (string, error) {
	p, err := Parse(s)
	if err != nil {
		return "", err
	}
	return p.SessionID()
}
