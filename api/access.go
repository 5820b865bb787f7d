package api

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem/api/subject"
	"github.com/agentmem/agentmem/internal/sharedmem"
	"github.com/agentmem/agentmem/tenancy"
)

// access is who may call an operation, declared in its row of the
// operation table: what is checked (check, write) and how the document
// says it (text). Run, through which the dispatcher serves every
// request, applies the check to the target the subject names before the
// handler runs: at once when it needs nothing but the caller and the
// subject (authorizeNow), else (a session's owner must be read) first
// thing in the operation's own goroutine (authorized), never on the
// transport's.
type access struct {
	check check
	write bool // the check is for changing the target, not reading it
	text  string
}

// check is what Run checks of the caller against the
// subject's target.
type check uint8

const (
	// checkNone: any caller (the tools' definitions hold no data).
	checkNone check = iota
	// checkSession: the session's (mem.v1.session.<id>, or the session
	// scope mem.v1.scope.session.<id>) user's or agent's principal; its
	// actor is asked for the owner.
	checkSession
	// checkScope: a caller the scope is readable (writable) to
	// (tenancy.Caller.Scope); a session's scope follows its session.
	checkScope
	// checkConfigure: as checkScope to write, and the scope's configurer
	// (tenancy.Caller.Configure): a configuration applies to every
	// member's entries.
	checkConfigure
	// checkErase: erasing a scope removes other writers' versions too: an
	// admin; a user's scope its user's principal, an agent's the agent, a
	// session's scope a caller that may change the session.
	checkErase
	// checkUser: a caller that may write the user's scope (erasing a user).
	checkUser
	// checkDataWrite: a caller that may write data (not a read-only
	// principal).
	checkDataWrite
	// checkOwner: the namespace's owner (a whole namespace's export,
	// import or archive reaches every writer's entries, so a grant to
	// the scope is not enough): an admin; a user's scope its user's
	// principal, an agent's the agent, a session's scope a caller that may
	// reach (write: change) the session; a scope shared by its members
	// (project, app, workflow...) an admin only.
	checkOwner

	// The checks below need what only the operation reads, so the
	// operation applies the declared access itself:
	//
	// checkByActor: the session's actor checks every command against the
	// owner it holds (and create against the body's owner).
	checkByActor
	// checkSessionIndex: the session's entry in the projection, once the
	// query's min_seq is applied (readable).
	checkSessionIndex
	// checkBody: what the body names (sessions.list: its user or agent;
	// data.get: the data's owner, once read).
	checkBody
)

// Who may call, as the document says it.
const (
	accessSession   = "a caller that may reach the session (its user's or agent's principal, or an admin)"
	accessSessionW  = "a caller that may change the session (its user's or agent's principal, or an admin)"
	accessScope     = "a caller the scope is readable to (its agent, its user, a principal granted the scope, or an admin)"
	accessScopeW    = "a caller that may write the scope (its agent, its user, a principal granted it for writing, or an admin; app and project scopes need an elevated caller)"
	accessAnyone    = "any caller"
	accessData      = "the data's owner (its putter) or an admin"
	accessEraseUser = "a caller that may write the user's scope (the user's own principal) or an admin"
	accessOwner     = "the namespace's owner (a user's scope its user's principal, an agent's the agent, a session's scope a caller that may reach the session) or an admin; shared scopes (project, app, ...) an admin"
	accessOwnerW    = "the namespace's owner (a user's scope its user's principal, an agent's the agent, a session's scope a caller that may change the session; not a reader) or an admin; shared scopes (project, app, ...) an admin"
)

// The accesses most rows declare.
var (
	bySessionActor  = access{check: checkByActor, text: accessSession}
	bySessionActorW = access{check: checkByActor, write: true, text: accessSessionW}
	sessionIndex    = access{check: checkSessionIndex, text: accessSession}
	sessionIndexW   = access{check: checkSessionIndex, write: true, text: accessSessionW}
	sessionOwnerW   = access{check: checkSession, write: true, text: accessSessionW}
	scopeReader     = access{check: checkScope, text: accessScope}
	scopeWriter     = access{check: checkScope, write: true, text: accessScopeW}
)

// target is what c's subject names for its access check: a session id,
// or a scope (a session's scope is its session's).
func (c *call) target() (scopeTarget, error) {
	switch c.subj.Family {
	case subject.Session:
		id, err := c.subj.SessionID()
		return scopeTarget{sharedmem.KindSession, id}, err
	case subject.User:
		id, err := c.subj.UserID()
		return scopeTarget{sharedmem.KindUser, id}, err
	}
	return c.scope()
}

// authorizeNow applies c's declared access when it needs no read of a
// session's owner, and reports whether the rest is left for later
// (authorized, in the operation's goroutine). A subject that names no
// valid target is left to the operation, which answers its 400.
func (s *Service) authorizeNow(c *call) (later bool, err error) {
	a := c.route.op.access
	switch {
	case a.check == checkNone || a.check >= checkByActor || c.who.Admin():
		return false, nil
	case a.check == checkDataWrite:
		return false, s.denied("data", c.who.Write("data"))
	}
	t, terr := c.target()
	switch {
	case terr != nil:
		return false, nil
	case t.kind == sharedmem.KindSession:
		if a.check == checkConfigure {
			err = s.denied("scope", c.who.Configure(string(t.kind), t.id))
		}
		return err == nil, err
	case a.check == checkSession:
		return false, nil // a session's operation on another kind: the operation answers 400
	}
	return false, s.authorizeTarget(context.Background(), c.who, a, t)
}

// authorized applies the part of c's declared access authorizeNow left
// for later: the session's owner read, bounded by ctx.
func (s *Service) authorized(ctx context.Context, c *call) error {
	if !c.later {
		return nil
	}
	t, err := c.target()
	if err != nil {
		return err
	}
	a := c.route.op.access
	if a.check == checkConfigure {
		a.check = checkScope // the configurer was checked at once
	}
	return s.authorizeTarget(ctx, c.who, a, t)
}

// authorizeTarget checks that who may call an operation declaring a on
// target t, counting a refusal by its family.
func (s *Service) authorizeTarget(ctx context.Context, who *tenancy.Caller, a access, t scopeTarget) error {
	switch a.check {
	case checkSession:
		return s.checkSession(ctx, who, t.id, a.write)
	case checkScope:
		return s.checkScope(ctx, who, t, a.write)
	case checkConfigure:
		if err := s.denied("scope", who.Configure(string(t.kind), t.id)); err != nil {
			return err
		}
		return s.checkScope(ctx, who, t, true)
	case checkErase:
		return s.mayEraseScope(ctx, who, t)
	case checkUser:
		return s.denied("erase", who.Scope(string(sharedmem.KindUser), t.id, true))
	case checkDataWrite:
		return s.denied("data", who.Write("data"))
	case checkOwner:
		return s.mayOwnScope(ctx, who, t, a.write)
	}
	return fmt.Errorf("api: check %d is applied by its operation", a.check)
}

// denied counts err, a refusal of the caller's permissions, under family.
func (s *Service) denied(family string, err error) error {
	if err != nil {
		s.metrics.Denied.WithLabelValues(family).Inc()
	}
	return err
}

// checkScope checks that who may reach scope t (write: change it). A
// session scope follows its session (the session actor knows the owner);
// every other scope follows from its kind and id.
func (s *Service) checkScope(ctx context.Context, who *tenancy.Caller, t scopeTarget, write bool) error {
	if who.Admin() {
		return nil
	}
	var err error
	if t.kind == sharedmem.KindSession {
		err = s.checkSession(ctx, who, t.id, write)
	} else {
		err = who.Scope(string(t.kind), t.id, write)
	}
	if err != nil {
		s.metrics.Denied.WithLabelValues("scope").Inc()
	}
	return err
}

// checkSession checks that who may reach session id (write: change it),
// asking the session's actor for its owner.
func (s *Service) checkSession(ctx context.Context, who *tenancy.Caller, id string, write bool) error {
	if who.Admin() {
		return nil
	}
	info, err := s.sessionInfo(ctx, id)
	if err != nil {
		return err
	}
	if err := who.Session(id, info.GetUserId(), info.GetAgentId(), write); err != nil {
		s.metrics.Denied.WithLabelValues("session").Inc()
		return err
	}
	return nil
}

// mayEraseScope checks that who may erase scope t.
func (s *Service) mayEraseScope(ctx context.Context, who *tenancy.Caller, t scopeTarget) error {
	var err error
	switch {
	case who.Admin():
		return nil
	case t.kind == sharedmem.KindSession:
		return s.checkSession(ctx, who, t.id, true)
	case t.kind == sharedmem.KindUser:
		err = who.Scope(string(t.kind), t.id, true)
	case t.kind == sharedmem.KindAgent:
		err = who.Configure(string(t.kind), t.id)
	default:
		err = &tenancy.DeniedError{Field: "scope", Reason: fmt.Sprintf("erasing %s:%s needs the admin role", t.kind, t.id)}
	}
	if err != nil {
		s.metrics.Denied.WithLabelValues("erase").Inc()
	}
	return err
}

// mayOwnScope checks that who owns scope t (checkOwner; write: to change
// it).
func (s *Service) mayOwnScope(ctx context.Context, who *tenancy.Caller, t scopeTarget, write bool) error {
	var err error
	switch {
	case who.Admin():
		return nil
	case t.kind == sharedmem.KindSession:
		return s.checkSession(ctx, who, t.id, write)
	case t.kind == sharedmem.KindUser || t.kind == sharedmem.KindAgent:
		err = who.Scope(string(t.kind), t.id, write)
	default:
		err = &tenancy.DeniedError{Field: "scope", Reason: fmt.Sprintf("%s:%s is shared by its members: managing it as a whole needs the admin role", t.kind, t.id)}
	}
	if err != nil {
		s.metrics.Denied.WithLabelValues("namespace").Inc()
	}
	return err
}
